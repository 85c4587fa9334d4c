#pragma once
#include "sim/cost/stage_cost.hpp"
#include "sim/graph/task_graph.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// Builds every rank's program from the plan and the per-virtual-stage costs:
///  - the stage's pipeline schedule, each forward, backward (or input-gradient / weight-gradient
///    pass) and recomputation as one compute op followed by its TP all-reduces (on the compute
///    stream, or on the TP stream alongside it with --tp-comm-overlap);
///  - pipeline exchanges with the neighbouring stages (batched on the compute stream, or one
///    FIFO stream per direction with --overlap-p2p-comm);
///  - data parallelism: the gradient all-reduce (reduce-scatter with the distributed optimizer)
///    in Megatron-Core's buckets of max(40M, 1M x dp) parameters, after the last backward or,
///    with --overlap-grad-reduce, bucket by bucket during it on the DP stream; the optimizer step
///    on the rank's (shard of the) parameters; with the distributed optimizer the parameter
///    all-gather, after the step or, with --overlap-param-gather, during the first forwards.
/// Full: a program per GPU. Symmetric: a program per pipeline stage, run by its GPU at tp 0,
/// dp 0 for all the stage's GPUs, its collectives priced over their whole groups (valid when
/// stage_symmetry() holds).
enum class Replay { kFull, kSymmetric };
TaskGraph build_task_graph(const Plan& plan, const CostModel& costs, Replay replay = Replay::kFull);

/// Megatron-Core's default gradient bucket: max(40,000,000, 1,000,000 x dp) parameters.
std::int64_t grad_bucket_params(std::int64_t dp);

}  // namespace trainsim
