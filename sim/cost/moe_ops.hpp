#pragma once
// A mixture-of-experts MLP on one GPU, as Megatron-Core runs it: the router (a GEMM to one logit
// per expert, softmax and top-k), the tokens permuted by expert and sent to the GPUs holding
// their experts (all-to-all over the expert-parallel group, or all-gather), gathered over the
// expert tensor-parallel group with sequence parallelism, the local experts' grouped GEMMs, and
// the way back (reduce-scatter, all-to-all, un-permute weighted by the router's probabilities).
#include "sim/cost/layer_ops.hpp"

namespace trainsim {

/// Appends the MoE MLP's forward kernels and collectives to a decoder pass.
void moe_forward(const LayerShape& s, BlockPass& p);
/// Appends its backward's.
void moe_backward(const LayerShape& s, BlockPass& p);
/// Appends what a recomputed MoE MLP communicates again: the routed part's dispatch and combine
/// over EP (all-to-all or all-gather) and its tokens' gather and scatter over expert TP
/// (`routed`), and the shared expert's TP collectives (`shared`).
void moe_recompute_collectives(const LayerShape& s, bool routed, bool shared, BlockPass& p);
/// Appends what torchtitan's per-operator checkpointing communicates again of an MoE MLP: its
/// all-gathers (and the shared expert's all-reduce without SP); it keeps the all-to-alls' and the
/// reduce-scatters' outputs.
void moe_op_recompute_collectives(const LayerShape& s, BlockPass& p);

}  // namespace trainsim
