// Calls beside a pass's kernels that outlast them (TP userbuffers, a CP ring, expert all-to-alls
// overlapped): the compute stream's wait after the kernels is its own op, counted as exposed
// communication of the kind waited for, not as compute; the step is the same either way.
// SimGrid allows one simulation per process; ctest runs every TEST in a process of its own.
#include <gtest/gtest.h>

#include "sim/engine/engine.hpp"
#include "sim/graph/builder.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

constexpr auto kTP = static_cast<std::size_t>(CommKind::kTP);
constexpr auto kDP = static_cast<std::size_t>(CommKind::kDP);
constexpr auto kEP = static_cast<std::size_t>(CommKind::kEP);

Span compute(double start, double end, ComputeKind kind = ComputeKind::kForward) {
  Span s;
  s.start = start;
  s.end = end;
  s.compute = true;
  s.compute_kind = kind;
  return s;
}

Span comm(double start, double end, CommKind kind) {
  Span s;
  s.start = start;
  s.end = end;
  s.comm = kind;
  return s;
}

// Kernels over [0, 1], the wait for the expert all-to-alls over [1, 1.5]; the all-to-all op
// beside them runs over [0, 1.2] and a DP reduction over [1.1, 1.6].
TEST(OverlapWait, SummaryCountsTheWaitAsExposedCommunicationOfItsKind) {
  Span wait = compute(1.0, 1.5, ComputeKind::kWait);
  wait.comm = CommKind::kEP;
  const RankStats st = summarize(
      {compute(0.0, 1.0), wait, comm(0.0, 1.2, CommKind::kEP), comm(1.1, 1.6, CommKind::kDP)}, 1.6);
  EXPECT_NEAR(st.compute_s, 1.0, 1e-12);
  // The wait is the all-to-alls' exposed time; what is left of their 1.2 s was hidden.
  EXPECT_NEAR(st.comm_s[kEP], 0.5, 1e-12);
  EXPECT_NEAR(st.comm_total_s[kEP], 1.2, 1e-12);
  EXPECT_NEAR(st.comm_hidden_s[kEP], 0.7, 1e-12);
  // The DP reduction is behind the wait until 1.5, then alone on an idle GPU.
  EXPECT_NEAR(st.comm_s[kDP], 0.1, 1e-12);
  EXPECT_NEAR(st.comm_hidden_s[kDP], 0.4, 1e-12);
  EXPECT_NEAR(st.comm_total_s[kDP], 0.5, 1e-12);
  EXPECT_NEAR(st.comm_total(), 0.6, 1e-12);
}

// One stage, 3 micro-batches; each forward's 10 ms include 1 ms of wait for TP calls and 2 ms
// for expert all-to-alls beside its kernels, each backward's 20 ms 3 ms for the all-to-alls.
constexpr double kTf = 10e-3, kTb = 20e-3;
constexpr double kFwdTp = 1e-3, kFwdEp = 2e-3, kBwdEp = 3e-3;

CostModel waiting_costs(bool split) {
  CostModel costs = test::uniform_costs(1, kTf, kTb);
  if (!split) return costs;  // the stalls folded into the kernels' time
  PassCost& f = costs.stages[0].forward;
  f.stall_s[index_of(Dim::kTP)] = kFwdTp;
  f.stall_s[index_of(Dim::kEP)] = kFwdEp;
  PassCost& b = costs.stages[0].backward;
  b.stall_s[index_of(Dim::kEP)] = kBwdEp;
  return costs;
}

Plan three_microbatches() {
  Plan plan;
  plan.gbs = 3;
  plan.seq_len = 1;
  return plan;
}

const Topology& one_gpu() {
  static const Topology topo(test::simple_platform(450, 0, 50, 0), 1);
  return topo;
}

TEST(OverlapWait, APassRunsItsKernelsThenAWaitPerKind) {
  const TaskGraph g = build_task_graph(three_microbatches(), waiting_costs(true));
  const auto& ops = g.ranks[0].ops;
  int forwards = 0, backwards = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].type != OpType::kCompute) continue;
    if (ops[i].compute == ComputeKind::kForward) {
      ++forwards;
      EXPECT_NEAR(ops[i].seconds, kTf - kFwdTp - kFwdEp, 1e-15);
      ASSERT_LT(i + 2, ops.size());
      EXPECT_EQ(ops[i + 1].compute, ComputeKind::kWait);
      EXPECT_EQ(ops[i + 1].comm, CommKind::kTP);
      EXPECT_NEAR(ops[i + 1].seconds, kFwdTp, 1e-15);
      EXPECT_EQ(ops[i + 2].compute, ComputeKind::kWait);
      EXPECT_EQ(ops[i + 2].comm, CommKind::kEP);
      EXPECT_NEAR(ops[i + 2].seconds, kFwdEp, 1e-15);
      EXPECT_EQ(ops[i + 2].microbatch, ops[i].microbatch);
    } else if (ops[i].compute == ComputeKind::kBackward) {
      ++backwards;
      EXPECT_NEAR(ops[i].seconds, kTb - kBwdEp, 1e-15);
      ASSERT_LT(i + 1, ops.size());
      EXPECT_EQ(ops[i + 1].compute, ComputeKind::kWait);
      EXPECT_EQ(ops[i + 1].comm, CommKind::kEP);
      EXPECT_NEAR(ops[i + 1].seconds, kBwdEp, 1e-15);
    }
  }
  EXPECT_EQ(forwards, 3);
  EXPECT_EQ(backwards, 3);
}

// The folded graph on the analytic engine: SimGrid runs one simulation per process.
void expect_waits_exposed(EngineKind engine) {
  const SimResult folded = simulate(build_task_graph(three_microbatches(), waiting_costs(false)),
                                    one_gpu(), EngineKind::kAnalytic);
  const SimResult split =
      simulate(build_task_graph(three_microbatches(), waiting_costs(true)), one_gpu(), engine);
  EXPECT_NEAR(split.step_time_s, folded.step_time_s, 1e-12);
  EXPECT_NEAR(folded.step_time_s, 3 * (kTf + kTb), 1e-12);
  const RankStats& r = split.ranks[0];
  EXPECT_NEAR(r.compute_s, 3 * (kTf + kTb - kFwdTp - kFwdEp - kBwdEp), 1e-12);
  EXPECT_NEAR(r.comm_s[kTP], 3 * kFwdTp, 1e-12);
  EXPECT_NEAR(r.comm_s[kEP], 3 * (kFwdEp + kBwdEp), 1e-12);
  EXPECT_NEAR(folded.ranks[0].comm_total(), 0.0, 1e-15);
}

TEST(OverlapWait, AnalyticExposesTheWaitsAndKeepsTheStep) {
  expect_waits_exposed(EngineKind::kAnalytic);
}

TEST(OverlapWait, SimGridExposesTheWaitsAndKeepsTheStep) {
  expect_waits_exposed(EngineKind::kSimGrid);
}

// Qwen3-30B-A3B at EP 16 over two nodes with --overlap-moe-expert-parallel-comm: each MoE layer's
// all-to-alls over InfiniBand outlast the layer's kernels, so every pass waits. No pipeline and
// no slowdown: the exposed EP time is the passes' stalls, micro-batch by micro-batch.
TEST(OverlapWait, ExpertAllToAllsOutlastingTheLayerAreExposed) {
  const Model m = test::catalog_model("qwen3-30b-a3b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan plan;
  plan.dp = 16;
  plan.ep = 16;
  plan.gbs = 32;
  plan.seq_len = 4096;
  plan.moe_a2a_overlap = true;
  const CostModel costs = compute_costs(m, pf, plan, test::uniform_partition(m, 1));
  const StageCost& sc = costs.stages[0];
  const double stalls = sc.forward.stall(Dim::kEP) + sc.backward.stall(Dim::kEP);
  ASSERT_GT(sc.forward.stall(Dim::kEP), 0.0);
  ASSERT_GT(sc.backward.stall(Dim::kEP), 0.0);
  const SimResult r = simulate_analytic(build_task_graph(plan, costs), Topology(pf, 16));
  EXPECT_NEAR(r.ranks[0].comm_s[kEP], 2 * stalls, 1e-9);
  double kernels = 0;
  for (const PassCost* p : {&sc.forward, &sc.backward}) {
    for (const auto& k : p->kernels) kernels += k.time.seconds * static_cast<double>(k.count);
  }
  EXPECT_NEAR(r.ranks[0].compute_s, 2 * kernels + sc.optimizer.seconds, 1e-9);
}

}  // namespace
}  // namespace trainsim
