#pragma once
// Megatron-LM's rules for the distributed optimizer's instances
// (--num-distributed-optimizer-instances).
#include "sim/plan/plan.hpp"

namespace trainsim {

/// Throws InputError naming the flag or JSON path at fault; nothing to check for one instance.
void validate_optimizer_instances(const Plan& plan, const PlanOrigin& origin);

}  // namespace trainsim
