#pragma once
// What --recompute selective re-runs of a decoder layer before its backward, module by module
// (sim/plan/recompute_modules.hpp), as Megatron-Core's checkpointing does.
#include "sim/cost/layer_ops.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// The selective recomputation of one decoder layer from its forward pass: its modules' kernels,
/// the attention core with its context-parallel exchange (as Transformer Engine re-runs it);
/// a recomputed dense MLP its TP collectives again (the input gathered and the output
/// reduce-scattered with sequence parallelism, else the output all-reduced); a recomputed MoE
/// MLP sends its tokens to their experts and back again, with their expert-TP gather and
/// scatter; a recomputed shared expert (alone or in the MoE MLP) its TP collectives.
BlockPass selective_recompute(const BlockPass& fwd, const LayerShape& shape, const Plan& plan);

/// What torchtitan's per-operator checkpointing (--recompute op) re-runs of a dense decoder layer
/// before its backward. Its policy keeps the outputs of the attention kernel, of the
/// reduce-scatters and of every other matmul in forward order (a Llama layer's wq, wv, w1, w2:
/// the first, third, fifth, seventh; the count restarts at each layer) and recomputes the rest:
/// the second, fourth and sixth matmuls (wk, wo, and w3 of a gated MLP or w2 of a plain one),
/// every element-wise kernel (norms, RoPE, the activation, the residual adds, FP8 casts), the
/// sequence-parallel all-gathers (the all-reduce after the attention without SP), and the
/// context-parallel collectives whose outputs the attention's backward reads (all but the ring
/// exchange, whose backward runs its own ring).
BlockPass op_recompute(const BlockPass& fwd, const LayerShape& shape);

}  // namespace trainsim
