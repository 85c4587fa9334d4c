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
  double tf;
  double tb;
};

SimResult run(const Case& c, EngineKind engine) {
  Plan plan;
  plan.pp = c.p;
  plan.gbs = c.m;
  plan.seq_len = 1;
  plan.schedule = c.schedule;
  const TaskGraph g = build_task_graph(plan, test::uniform_costs(c.p, c.tf, c.tb));
  // No latency and transfers of 0 bytes: communication is free.
  const Topology topo(test::simple_platform(450, 0, 50, 0), plan.world_size());
  return simulate(g, topo, engine);
}

void expect_closed_form(const Case& c, EngineKind engine) {
  const SimResult r = run(c, engine);
  const double step = static_cast<double>(c.m + c.p - 1) * (c.tf + c.tb);
  EXPECT_NEAR(r.step_time_s, step, 1e-12 * step);
  // Every stage computes m (tf + tb) and idles the bubble (p - 1)(tf + tb).
  for (const auto& rank : r.ranks) {
    EXPECT_NEAR(rank.compute_s, static_cast<double>(c.m) * (c.tf + c.tb), 1e-12 * step);
    EXPECT_NEAR(rank.comm_total(), 0.0, 1e-12);
  }
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
  return std::string(c.schedule == ScheduleKind::kGPipe ? "GPipe" : "OneFOneB") + "_p" +
         std::to_string(c.p) + "_m" + std::to_string(c.m) + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineClosedForm,
                         ::testing::Values(Case{ScheduleKind::k1F1B, 4, 8, 1.0, 2.0},
                                           Case{ScheduleKind::k1F1B, 8, 8, 0.5, 1.0},
                                           Case{ScheduleKind::k1F1B, 4, 2, 1.0, 2.0},
                                           Case{ScheduleKind::k1F1B, 1, 5, 1.0, 2.0},
                                           Case{ScheduleKind::kGPipe, 4, 8, 1.0, 2.0},
                                           Case{ScheduleKind::kGPipe, 3, 7, 0.3, 0.7}),
                         case_name);

TEST(PipelineBubble, OneFOneBFractionIsPMinusOneOverMPlusPMinusOne) {
  const Case c{ScheduleKind::k1F1B, 4, 12, 1.0, 2.0};
  const SimResult r = run(c, EngineKind::kAnalytic);
  double idle = 0;
  for (const auto& rank : r.ranks) idle += r.step_time_s - rank.compute_s;
  EXPECT_NEAR(idle / 4.0 / r.step_time_s, 3.0 / 15.0, 1e-12);
}

}  // namespace
}  // namespace trainsim
