#pragma once
#include <vector>

#include "sim/check/diagnostic.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

/// Diagnostics computed from the inputs before simulation.
std::vector<Diagnostic> check_plan(const Model& model, const Platform& platform, const Plan& plan,
                                   const Partition& partition, const CostModel& costs);

}  // namespace trainsim
