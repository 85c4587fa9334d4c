#pragma once
#include "sim/cost/stage_cost.hpp"
#include "sim/graph/task_graph.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// Builds every rank's program: the stage's schedule with each forward or backward pass as one
/// compute op followed by the pass's TP all-reduces (issued back to back, exposed), pipeline
/// exchanges with the neighbouring stages, then the DP gradient all-reduce and the optimizer step.
TaskGraph build_task_graph(const Plan& plan, const CostModel& costs);

}  // namespace trainsim
