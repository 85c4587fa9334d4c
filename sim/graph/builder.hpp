#pragma once
#include <cstdint>
#include <vector>

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
/// Full: a program per GPU. Symmetric: a program per pipeline stage and chain class, run by one
/// GPU for all the stage's GPUs of its class (the stage's first GPU for the first), its
/// collectives priced over their whole groups (valid when stage_symmetry() holds).
enum class Replay { kFull, kSymmetric };

/// Which GPUs replay a stage in a symmetric replay: one per class of pipeline chain (the GPUs at
/// one offset from their stage's first GPU, in every stage), the GPUs of a class reaching their
/// pipeline neighbours over the same routes (sim/graph/symmetry.hpp). Empty: one class, each
/// stage's first GPU. A GPU's class is that of its offset from its stage's first GPU modulo
/// `modulus`.
struct ChainClasses {
  std::vector<std::int64_t> rep_offsets;       // per class, from the stage's first GPU; first 0
  std::vector<std::int32_t> class_of_residue;  // per offset modulo `modulus`
  std::int64_t modulus = 1;
  std::int64_t count() const {
    return rep_offsets.empty() ? 1 : static_cast<std::int64_t>(rep_offsets.size());
  }
  std::int32_t class_of(std::int64_t offset) const {
    return rep_offsets.empty() ? 0 : class_of_residue[static_cast<std::size_t>(offset % modulus)];
  }
  std::int64_t rep_offset(std::int64_t c) const {
    return rep_offsets.empty() ? 0 : rep_offsets[static_cast<std::size_t>(c)];
  }
};

TaskGraph build_task_graph(const Plan& plan, const CostModel& costs, Replay replay = Replay::kFull,
                           const ChainClasses& chains = {});

/// Megatron-Core's default gradient bucket: max(40,000,000, 1,000,000 x dp) parameters.
std::int64_t grad_bucket_params(std::int64_t dp);

}  // namespace trainsim
