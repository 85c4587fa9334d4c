#pragma once
// Parameters each GPU holds of one decoder layer: its TP shard of the attention and the MLP, the
// replicated norms and biases, and of a mixture-of-experts layer its EP x expert-TP share of the
// routed experts.
#include <cstdint>

#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// Parameters of one dense decoder layer held by each TP rank: sharded projections, replicated
/// norms, row-parallel biases and MLA's down-projections.
std::int64_t layer_params_per_rank(const Model& model, std::int64_t tp);
/// One decoder layer's under a plan: of a mixture-of-experts model, an MoE layer (the experts
/// split over ep x etp, the router replicated, the shared expert split over TP) or, with
/// `moe_layer` false, one of its dense layers.
std::int64_t layer_params_per_rank(const Model& model, const Plan& plan, bool moe_layer = true);
/// Parameters of one MoE layer's routed experts held by each GPU (0 for a dense model).
std::int64_t expert_params_per_rank(const Model& model, const Plan& plan);

}  // namespace trainsim
