#pragma once
// The vocabulary-parallel blocks' kernels and tensor-parallel calls on one GPU, as Megatron-Core
// runs them: the embedding (VocabParallelEmbedding), the LM head (its own ColumnParallelLinear,
// outside Transformer Engine), nanotron's cast of the logits and the vocabulary-parallel
// cross-entropy.
#include "sim/cost/layer_ops.hpp"

namespace trainsim {

/// How the embedding's partial rows are summed over TP: with sequence parallelism Megatron-Core
/// reduce-scatters them to the ranks' shares of the sequence (reduce_scatter_embeddings), but
/// with learned positions, which it adds to the whole sequence, it all-reduces them and keeps
/// its share; without sequence parallelism it all-reduces them.
CollectiveKind embedding_output_call(const LayerShape& s);

/// Appends the forward (or backward) pass of an embedding, LM head, cast or loss block.
void vocab_block(BlockKind kind, bool backward, const LayerShape& s, BlockPass& p);

/// The LM head's backward in a micro-batch that leaves its weight gradient to the pipeline
/// flush (--defer-embedding-wgrad-compute): the input-gradient GEMM, and its call after it, with
/// no GEMM left to hide it and no gather of the input.
BlockPass lm_head_deferring_backward(const LayerShape& s);
/// One deferred micro-batch's weight gradient in the flush (Megatron-Core's
/// drain_embedding_wgrad_compute): the GEMM and, with sequence parallelism, the all-gather of
/// its input, which the flush posts beside the previous micro-batch's GEMM (the first before
/// them all).
BlockPass lm_head_flush(const LayerShape& s);

}  // namespace trainsim
