#pragma once
// LoRA fine-tuning (Plan::lora_rank) on a block's passes: every base weight frozen, so its
// backward computes input gradients only, and in each decoder layer a low-rank adapter beside
// each target linear, as NeMo's ParallelLinearAdapter runs it on Megatron-Core's layers.
#include <cstdint>

#include "sim/cost/layer_ops.hpp"

namespace trainsim {

/// `passes` of a `block` with its weights frozen and, for a decoder layer, its adapters:
///  - the backward drops every weight-gradient GEMM (and the embedding's gradient); with
///    sequence parallelism the re-gather of a linear's input for that GEMM goes with it, and a
///    TP call that ran beside it runs after the pass instead;
///  - an adapter beside a column-parallel linear (linear_qkv, linear_fc1): A, a
///    ColumnParallelLinear of rank / tp outputs on the linear's gathered input, its output
///    all-gathered over TP; B, of the linear's own outputs per rank; their product scaled and
///    added to the linear's output. Backward: both GEMMs' data and weight gradients, B's input
///    gradient all-reduced over TP, and without sequence parallelism A's too (with it, Transformer
///    Engine's reduce-scatter of the norm's gradient carries it);
///  - beside a row-parallel linear (linear_proj, linear_fc2): A, a RowParallelLinear to rank
///    outputs, all-reduced over TP; B, of hidden / tp outputs, all-gathered over TP to the whole
///    hidden size (with sequence parallelism each rank keeps its share); backward, B's input
///    gradient all-reduced and with sequence parallelism the output gradient all-gathered.
/// Adapters run in BF16 (Megatron's own linears), their calls on the compute stream; the scale
/// by alpha / dim reads and writes its tensor once each way, and A's input gradient is added to
/// the linear's. Under FP8 a frozen linear casts its input without the transpose.
void apply_lora(BlockPasses& passes, BlockKind block, const LayerShape& s);

/// The adapter parameters of one decoder layer on one GPU (its TP shard of A and B of each target).
std::int64_t lora_params_per_layer(const LayerShape& s);

}  // namespace trainsim
