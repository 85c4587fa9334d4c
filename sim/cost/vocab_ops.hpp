#pragma once
// The vocabulary-parallel blocks' kernels and tensor-parallel calls on one GPU, as Megatron-Core
// runs them: the embedding (VocabParallelEmbedding), the LM head (its own ColumnParallelLinear,
// outside Transformer Engine), nanotron's cast of the logits and the vocabulary-parallel
// cross-entropy.
#include "sim/cost/layer_ops.hpp"

namespace trainsim {

/// Appends the forward (or backward) pass of an embedding, LM head, cast or loss block.
void vocab_block(BlockKind kind, bool backward, const LayerShape& s, BlockPass& p);

}  // namespace trainsim
