#pragma once
// The whole pipeline for one plan: its partition (any rule, including trainsim's balanced one),
// costs, task graph and replay. search/ uses it to price the alternatives fixes propose.
#include <vector>

#include "sim/cost/stage_cost.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/task_graph.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

/// The partition the plan's --partition rule builds. InputError (naming the flag or scenario
/// path from `origin`) where the framework itself would refuse the options.
Partition build_partition(const Model& model, const Platform& platform, const Plan& plan,
                          const PlanOrigin& origin = {});

/// Per-micro-batch time of every block (forward + backward, including the block's tensor-parallel
/// all-reduces on this platform): the weights of the balanced partition.
std::vector<double> block_times(const Model& model, const Platform& platform, const Plan& plan,
                                const std::vector<Block>& blocks);

/// Per-micro-batch time of every stage: forward + backward compute and the TP all-reduces.
std::vector<double> stage_times(const Platform& platform, const Plan& plan, const CostModel& costs);

/// trainsim's rule: the contiguous partition of the model's blocks over pp stages that minimises
/// the slowest stage's per-micro-batch time, found exactly by dynamic programming over the
/// block boundaries. Every stage gets at least one block with parameters.
Partition balanced_partition(const Model& model, const Platform& platform, const Plan& plan);

struct Evaluation {
  Partition partition;
  CostModel costs;
  SimResult sim;
};

/// The task graph of costs already computed, replayed (symmetric where the layout allows it).
/// `step_only`: the step time alone (EngineOptions::step_only).
SimResult replay(const Platform& platform, const Plan& plan, const CostModel& costs,
                 EngineKind engine = EngineKind::kAnalytic, CollectiveShapes* shapes = nullptr,
                 bool step_only = false);

/// The same replay with the caller's engine options (timelines kept, collectives listed); the
/// platform's compute slowdown is set here.
SimResult replay_with(const Platform& platform, const Plan& plan, const CostModel& costs,
                      EngineKind engine, EngineOptions options);

/// Costs, task graph and replay of `partition`; the analytic engine unless told otherwise.
/// `shapes`: group shapes priced already on this platform, shared by the plans of a search.
Evaluation evaluate(const Model& model, const Platform& platform, const Plan& plan,
                    Partition partition, EngineKind engine = EngineKind::kAnalytic,
                    CollectiveShapes* shapes = nullptr);

}  // namespace trainsim
