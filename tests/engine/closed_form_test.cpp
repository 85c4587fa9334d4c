// Pipeline schedules with uniform stages and free communication against their closed forms.
// SimGrid allows one simulation per process; ctest runs every TEST in a process of its own.
#include <gtest/gtest.h>

#include "sim/engine/engine.hpp"
#include "sim/graph/builder.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

struct Case {
  ScheduleKind schedule;
  std::int64_t p;
  std::int64_t m;
  double tf;  // a stage's forward per micro-batch (all its chunks)
  double tb;  // its whole backward
  std::int64_t v = 1;
  double tw = 0;           // the weight-gradient part of tb (zb-h1)
  std::int64_t group = 0;  // interleaved micro-batch group size (0: pp)
};

SimResult run(const Case& c, EngineKind engine) {
  Plan plan;
  plan.pp = c.p;
  plan.vp = c.v;
  plan.gbs = c.m;
  plan.seq_len = 1;
  plan.schedule = c.schedule;
  plan.microbatch_group_size_per_vp_stage = c.group;
  const auto v = static_cast<double>(c.v);
  // Each of a stage's v chunks does 1/v of its work.
  const TaskGraph g =
      build_task_graph(plan, test::uniform_costs(c.p * c.v, c.tf / v, c.tb / v, c.tw / v));
  // No latency and transfers of 0 bytes: communication is free.
  const Topology topo(test::simple_platform(450, 0, 50, 0), plan.world_size());
  return simulate(g, topo, engine);
}

// The idle time of every stage, by schedule:
//   gpipe, 1f1b:  (p - 1)(F + B)
//   interleaved:  (p - 1)(F + B) / v          (Megatron-LM; Narayanan et al. 2021)
//   zb-h1:        (p - 1)(F + B - 2W)         (Qi et al. 2024; DualPipe README, B whole)
double bubble(const Case& c) {
  const double p1 = static_cast<double>(c.p - 1);
  switch (c.schedule) {
    case ScheduleKind::kInterleaved:
      return p1 * (c.tf + c.tb) / static_cast<double>(c.v);
    case ScheduleKind::kZBH1:
      return p1 * (c.tf + c.tb - 2.0 * c.tw);
    default:
      return p1 * (c.tf + c.tb);
  }
}

void expect_closed_form(const Case& c, EngineKind engine) {
  const SimResult r = run(c, engine);
  const double work = static_cast<double>(c.m) * (c.tf + c.tb);
  const double step = work + bubble(c);
  EXPECT_NEAR(r.step_time_s, step, 1e-12 * step);
  for (const auto& rank : r.ranks) {
    EXPECT_NEAR(rank.compute_s, work, 1e-12 * step);
    EXPECT_NEAR(rank.comm_total(), 0.0, 1e-12);
  }
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << to_string(c.schedule) << " p " << c.p << " m " << c.m << " v " << c.v << " F " << c.tf
      << " B " << c.tb << " W " << c.tw;
}

class PipelineClosedForm : public ::testing::TestWithParam<Case> {};

TEST_P(PipelineClosedForm, Analytic) {
  expect_closed_form(GetParam(), EngineKind::kAnalytic);
}
TEST_P(PipelineClosedForm, SimGrid) {
  expect_closed_form(GetParam(), EngineKind::kSimGrid);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string name;
  switch (c.schedule) {
    case ScheduleKind::kGPipe:
      name = "GPipe";
      break;
    case ScheduleKind::k1F1B:
      name = "OneFOneB";
      break;
    case ScheduleKind::kInterleaved:
      name = "Interleaved_v" + std::to_string(c.v);
      break;
    case ScheduleKind::kZBH1:
      name = "ZBH1";
      break;
  }
  return name + "_p" + std::to_string(c.p) + "_m" + std::to_string(c.m) + "_" +
         std::to_string(info.index);
}

using S = ScheduleKind;
INSTANTIATE_TEST_SUITE_P(
    Schedules, PipelineClosedForm,
    ::testing::Values(
        Case{S::k1F1B, 4, 8, 1.0, 2.0}, Case{S::k1F1B, 8, 8, 0.5, 1.0},
        Case{S::k1F1B, 4, 2, 1.0, 2.0}, Case{S::k1F1B, 1, 5, 1.0, 2.0},
        Case{S::kGPipe, 4, 8, 1.0, 2.0}, Case{S::kGPipe, 3, 7, 0.3, 0.7},
        Case{S::kInterleaved, 4, 8, 1.0, 2.0, 2}, Case{S::kInterleaved, 4, 12, 1.0, 2.0, 3},
        Case{S::kInterleaved, 8, 16, 1.0, 2.0, 4}, Case{S::kInterleaved, 2, 6, 0.5, 1.5, 4},
        // Micro-batch counts that are not a multiple of pp, as Megatron-LM allows
        // them: groups of 6 (one group) and of 5 (two groups).
        Case{S::kInterleaved, 4, 6, 1.0, 2.0, 2, 0, 6},
        Case{S::kInterleaved, 4, 10, 1.0, 2.0, 2, 0, 5}, Case{S::kZBH1, 4, 8, 1.0, 2.0, 1, 1.0},
        Case{S::kZBH1, 4, 8, 1.0, 2.0, 1, 0.2}, Case{S::kZBH1, 8, 16, 1.0, 2.0, 1, 1.0},
        Case{S::kZBH1, 4, 4, 1.0, 2.0, 1, 1.0}, Case{S::kZBH1, 3, 7, 0.3, 0.7, 1, 0.3}),
    case_name);

double bubble_fraction(const SimResult& r) {
  double idle = 0;
  for (const auto& rank : r.ranks) idle += r.step_time_s - rank.compute_s;
  return idle / static_cast<double>(r.ranks.size()) / r.step_time_s;
}

TEST(PipelineBubble, OneFOneBFractionIsPMinusOneOverMPlusPMinusOne) {
  const SimResult r = run({ScheduleKind::k1F1B, 4, 12, 1.0, 2.0}, EngineKind::kAnalytic);
  EXPECT_NEAR(bubble_fraction(r), 3.0 / 15.0, 1e-12);
}

TEST(PipelineBubble, InterleavedFractionIsPMinusOneOverMVPlusPMinusOne) {
  // Megatron-LM's definition: (p - 1) / (m v + p - 1) of the step.
  const SimResult r = run({ScheduleKind::kInterleaved, 4, 8, 1.0, 2.0, 3}, EngineKind::kAnalytic);
  EXPECT_NEAR(bubble_fraction(r), 3.0 / (8.0 * 3.0 + 3.0), 1e-12);
}

TEST(PipelineBubble, ZeroBubbleH1IsAThirdOf1F1BWhenFBWAreEqual) {
  // F = B_input = W: 1F1B idles (p - 1) 3F, ZB-H1 (p - 1) F.
  const SimResult zb = run({ScheduleKind::kZBH1, 4, 8, 1.0, 2.0, 1, 1.0}, EngineKind::kAnalytic);
  const SimResult ob = run({ScheduleKind::k1F1B, 4, 8, 1.0, 2.0}, EngineKind::kAnalytic);
  EXPECT_NEAR(zb.step_time_s - 24.0, (ob.step_time_s - 24.0) / 3.0, 1e-12);
}

}  // namespace
}  // namespace trainsim
