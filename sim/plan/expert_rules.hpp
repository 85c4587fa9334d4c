#pragma once
// Megatron-Core's rules for mixture-of-experts plans: expert parallelism, expert tensor
// parallelism and the load inputs.
#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// Throws InputError naming the flag or JSON path at fault; nothing to check for a dense plan.
void validate_expert_parallelism(const Plan& plan, const Model& model, const PlanOrigin& origin);

}  // namespace trainsim
