#pragma once
// Megatron-Core's and Transformer Engine's rules for context parallelism: how the sequence is
// cut, which attention runs under it and which exchange the heads allow.
#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// Throws InputError naming the flag or JSON path at fault; nothing to check at cp 1.
void validate_context_parallelism(const Plan& plan, const Model& model, const PlanOrigin& origin);

}  // namespace trainsim
