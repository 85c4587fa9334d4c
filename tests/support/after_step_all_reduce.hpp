#pragma once
// A step that ends with one all-reduce of a stage's bytes, for the tests of the calls
// finalize_model_grads makes before the optimizer step.
#include "sim/cost/stage_cost.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/builder.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/topology.hpp"

namespace trainsim::test {

/// One pipeline stage of 8 GPUs on one node (NVLink 450 GB/s, no latency), 4 micro-batches of
/// 1 ms forward and 2 ms backward, and 1 GB in `bytes` of its stage cost: the step is the
/// micro-batches' closed form and then the ring all-reduce over the 8 GPUs, on either engine and
/// either replay. `plan` places the 8 GPUs (its gbs and seq_len are set here).
struct AfterStepAllReduce {
  static constexpr double kBytes = 1e9;
  Plan plan;
  CostModel costs;
  Topology topo;
  AfterStepAllReduce(Plan p, double StageCost::*bytes);
  /// The all-reduce over the 8 GPUs as the collectives price it (a ring of eight: 2 x 7/8 of
  /// the buffer through each GPU's link, which the tests check).
  double all_reduce() const;
  /// 4 x 3 ms, then the all-reduce.
  double closed_form() const { return 4 * 3e-3 + all_reduce(); }
  double step(EngineKind engine, Replay replay) const;
};

}  // namespace trainsim::test
