#pragma once
// Rules of the distributed optimizer: Megatron-LM's for its instances
// (--num-distributed-optimizer-instances), and the BF16 optimizer states it alone runs.
#include "sim/plan/plan.hpp"

namespace trainsim {

/// Throws InputError naming the flag or JSON path at fault; nothing to check for one instance.
void validate_optimizer_instances(const Plan& plan, const PlanOrigin& origin);
/// The BF16 optimizer states need the distributed optimizer (zero >= 1).
void validate_optimizer_state(const Plan& plan, const PlanOrigin& origin);

}  // namespace trainsim
