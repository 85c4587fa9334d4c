#pragma once
// What every detector reads: the plan, its model and platform, and what was already computed for
// it. Detectors only read it; none simulates anything.
#include <vector>

#include "sim/cost/stage_cost.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

struct MemoryModel;  // sim/memory/memory.hpp

struct CheckOptions {
  /// stage-imbalance fires when the slowest stage exceeds the mean stage by more than this.
  double imbalance_threshold = 0.10;
};

struct CheckContext {
  const Model& model;
  const Platform& platform;
  const Plan& plan;
  const Partition& partition;
  const CostModel& costs;
  /// Per-micro-batch time of every stage, forward and backward with their TP all-reduces
  /// (evaluate's stage_times): check does not link the engine that prices the all-reduces.
  const std::vector<double>& stage_times;
  CheckOptions options;
  /// The plan's memory where the caller has computed it already (null: detectors compute it).
  const MemoryModel* memory = nullptr;
};

}  // namespace trainsim
