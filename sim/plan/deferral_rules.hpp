#pragma once
// Megatron-LM's rules for deferring the LM head's weight gradient to the pipeline flush
// (--defer-embedding-wgrad-compute, --wgrad-deferral-limit).
#include "sim/plan/plan.hpp"

namespace trainsim {

/// The rules on the plan alone (a fix search drops the deferral where they refuse it). Throws
/// InputError naming the flag or JSON path at fault.
void validate_wgrad_deferral(const Plan& plan, const PlanOrigin& origin);

/// With the model too: multi-token prediction's extra LM-head runs are not modelled deferred.
void validate_wgrad_deferral(const Plan& plan, const Model& model, const PlanOrigin& origin);

}  // namespace trainsim
