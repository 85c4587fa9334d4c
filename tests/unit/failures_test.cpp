// A run with failures (sim/report/failures): the wall-clock of S seconds of training checkpointed
// every T seconds is S (1 + C / T) / (b - T / 2M), b = 1 - (R + C / 2) / M, least at
// T* = sqrt(C^2 + 2 M b C) - C; checked in closed form, at its optimum, in Young's limit, in whole
// steps, and where the job cannot finish.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/report/failures.hpp"

namespace trainsim {
namespace {

TEST(Failures, SlowdownInClosedForm) {
  // M 10,000 s, C 50 s, R 200 s, T 1,000 s: b = 1 - 225 / 10,000 = 0.9775, the denominator
  // 0.9775 - 0.05 = 0.9275, the numerator 1.05.
  EXPECT_DOUBLE_EQ(*failure_slowdown(1000, 10000, 50, 200), 1.05 / 0.9275);
  // Without saves or restarts a failure loses half an interval: 1 / (1 - T / 2M).
  EXPECT_DOUBLE_EQ(*failure_slowdown(1000, 10000, 0, 0), 1 / 0.95);
  // Failing sooner than a restart and half a cycle take: no end.
  EXPECT_FALSE(failure_slowdown(1000, 10000, 50, 9500).has_value());
}

TEST(Failures, TheBestIntervalIsTheSlowdownsMinimum) {
  // T* = sqrt(50^2 + 2 x 10,000 x 0.9775 x 50) - 50 = sqrt(980,000) - 50.
  const double best = best_checkpoint_interval(10000, 50, 200);
  EXPECT_DOUBLE_EQ(best, std::sqrt(980000.0) - 50);
  const double at_best = *failure_slowdown(best, 10000, 50, 200);
  for (const double t : {best - 1, best + 1, best * 0.9, best * 1.1, 100.0, 5000.0}) {
    EXPECT_LT(at_best, *failure_slowdown(t, 10000, 50, 200)) << t;
  }
  // Young's sqrt(2 M C) where saves are short against the MTBF; 0 where they are free.
  EXPECT_NEAR(best_checkpoint_interval(1e9, 1, 0) / std::sqrt(2e9), 1, 1e-4);
  EXPECT_EQ(best_checkpoint_interval(10000, 0, 200), 0);
}

// 1,000,000 s of 10 s steps on 16,384 GPUs whose job MTBF is 10,000 s: T* = 939.9 s lies between
// 93 and 94 steps, and the run is checkpointed at whichever loses less.
TEST(Failures, AWholeNumberOfStepsBetweenCheckpoints) {
  const double gpus = 16384, job_mtbf = 10000;
  TrainingBudget budget;
  budget.gpu_mtbf_hours = job_mtbf * gpus / 3600;
  budget.checkpoint_s = 50;
  budget.restart_s = 200;
  budget.price_per_gpu_hour = 2;
  const auto f = failure_cost(budget, 1e6, 10, 16384);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->gpus, 16384);
  EXPECT_DOUBLE_EQ(f->job_mtbf_s(), job_mtbf);
  const double s93 = *failure_slowdown(930, job_mtbf, 50, 200);
  const double s94 = *failure_slowdown(940, job_mtbf, 50, 200);
  EXPECT_EQ(f->interval_steps, s93 < s94 ? 93 : 94);
  const double slowdown = std::min(s93, s94);
  EXPECT_DOUBLE_EQ(f->interval_s, 10.0 * static_cast<double>(f->interval_steps));
  EXPECT_DOUBLE_EQ(f->seconds, 1e6 * slowdown);
  EXPECT_DOUBLE_EQ(f->failures, 1e6 * slowdown / job_mtbf);
  EXPECT_DOUBLE_EQ(f->lost, 1 - 1 / slowdown);
  EXPECT_DOUBLE_EQ(f->gpu_hours, 1e6 * slowdown * gpus / 3600);
  EXPECT_DOUBLE_EQ(*f->cost, 2 * f->gpu_hours);
  // Free saves: a checkpoint every step, each failure losing half a step and the restart.
  budget.checkpoint_s = 0;
  const auto free_saves = failure_cost(budget, 1e6, 10, 16384);
  EXPECT_EQ(free_saves->interval_steps, 1);
  EXPECT_DOUBLE_EQ(free_saves->seconds, 1e6 / (1 - (200 + 5) / job_mtbf));
  // No MTBF, no failures.
  budget.gpu_mtbf_hours.reset();
  EXPECT_FALSE(failure_cost(budget, 1e6, 10, 16384).has_value());
}

TEST(Failures, AJobThatFailsFasterThanItRestartsNeverFinishes) {
  TrainingBudget budget;
  budget.gpu_mtbf_hours = 10;  // 256 GPUs: one failure every 140.6 s
  budget.restart_s = 600;
  const auto f = failure_cost(budget, 1e6, 4.5, 256);
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(f->finishes);
  EXPECT_NE(failures_text(*f).find("the job never finishes"), std::string::npos);
}

}  // namespace
}  // namespace trainsim
