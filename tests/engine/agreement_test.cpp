// The analytic back end and SimGrid agree exactly when nothing contends. (One SimGrid run per
// process: each TEST here runs in its own.)
#include <gtest/gtest.h>

#include "sim/engine/engine.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/graph/builder.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// `exposure`: also compare exposed communication per rank. Without it only when each rank
// finishes: transfers off the critical path may share a link in SimGrid (a GPU sending
// activations forward and gradients back at once) and shift the exposed time between kinds.
void expect_agreement(const std::string& model_name, Plan plan, bool exposure = true) {
  const Model m = test::catalog_model(model_name);
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto part = build_partition(m, pf, plan);
  const auto graph = build_task_graph(plan, compute_costs(m, pf, plan, part));
  const Topology topo(pf, plan.world_size());
  const SimResult a = simulate_analytic(graph, topo);
  const SimResult s = simulate_simgrid(graph, topo);
  EXPECT_NEAR(a.step_time_s, s.step_time_s, 1e-9 * s.step_time_s);
  ASSERT_EQ(a.ranks.size(), s.ranks.size());
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_NEAR(a.ranks[r].end_s, s.ranks[r].end_s, 1e-9 * s.step_time_s) << r;
    EXPECT_NEAR(a.ranks[r].compute_s, s.ranks[r].compute_s, 1e-9 * s.step_time_s) << r;
    if (!exposure) continue;
    for (std::size_t k = 0; k < kNumCommKinds; ++k) {
      EXPECT_NEAR(a.ranks[r].comm_s[k], s.ranks[r].comm_s[k], 1e-9 * s.step_time_s)
          << r << " " << k;
    }
  }
}

Plan make_plan(std::int64_t tp, std::int64_t pp, std::int64_t dp, std::int64_t gbs,
               std::int64_t seq, ScheduleKind schedule) {
  Plan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.gbs = gbs;
  p.seq_len = seq;
  p.schedule = schedule;
  return p;
}

TEST(EngineAgreement, Llama70bOn64Gpus1F1B) {
  expect_agreement("llama3.1-70b", make_plan(4, 4, 4, 128, 8192, ScheduleKind::k1F1B));
}

TEST(EngineAgreement, Llama8bGPipe) {
  expect_agreement("llama3.1-8b", make_plan(8, 2, 2, 32, 4096, ScheduleKind::kGPipe));
}

TEST(EngineAgreement, Llama70bOn1024Gpus) {
  expect_agreement("llama3.1-70b", make_plan(8, 4, 32, 512, 8192, ScheduleKind::k1F1B));
}

TEST(EngineAgreement, Llama8bZeroBubbleH1) {
  expect_agreement("llama3.1-8b", make_plan(8, 4, 1, 16, 4096, ScheduleKind::kZBH1));
}

TEST(EngineAgreement, Llama8bInterleaved) {
  Plan p = make_plan(8, 4, 1, 16, 4096, ScheduleKind::kInterleaved);
  p.vp = 2;
  expect_agreement("llama3.1-8b", p, false);
}

// With a compute slowdown, a compute op is slowed only while data moves: a receive posted early
// on the pipeline stream, waiting for its sender, does not slow the GPU. SimGrid shares the GPU
// exactly, the analytic engine stretches to first order: within 0.5 % when nothing contends.
TEST(EngineAgreement, Llama8bInterleavedWithComputeSlowdown) {
  Plan p = make_plan(8, 4, 1, 16, 4096, ScheduleKind::kInterleaved);
  p.vp = 2;
  p.sp = true;
  p.tp_comm_overlap = true;
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto graph = build_task_graph(p, compute_costs(m, pf, p, build_partition(m, pf, p)));
  const Topology topo(pf, p.world_size());
  EngineOptions options;
  options.compute_slowdown = 0.2;
  const SimResult a = simulate_analytic(graph, topo, options);
  const SimResult s = simulate_simgrid(graph, topo, options);
  const SimResult still = simulate_analytic(graph, topo);
  EXPECT_GT(a.step_time_s, still.step_time_s);
  EXPECT_NEAR(s.step_time_s, a.step_time_s, 0.005 * a.step_time_s);
}

TEST(EngineAgreement, Llama8bRecomputeSequenceParallelTpOverlap) {
  Plan p = make_plan(8, 2, 1, 8, 4096, ScheduleKind::k1F1B);
  p.recompute = Recompute::kFull;
  p.sp = true;
  p.tp_comm_overlap = true;
  expect_agreement("llama3.1-8b", p);
}

}  // namespace
}  // namespace trainsim
