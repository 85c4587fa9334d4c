#pragma once
// Diagnostics of a plan: what the frameworks would do wrong with it, in plain words, each with a
// fix that names a concrete alternative plan and its simulated step time (analytic engine).
#include <vector>

#include "sim/check/diagnostic.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

struct CheckOptions {
  /// stage-imbalance fires when the slowest stage exceeds the mean stage by more than this.
  double imbalance_threshold = 0.10;
};

std::vector<Diagnostic> check_plan(const Model& model, const Platform& platform, const Plan& plan,
                                   const Partition& partition, const CostModel& costs,
                                   const CheckOptions& options = {});

}  // namespace trainsim
