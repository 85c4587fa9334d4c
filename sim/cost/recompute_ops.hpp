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

}  // namespace trainsim
