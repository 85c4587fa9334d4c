// A long step priced from a short one: the periodicity check on its own, the shorter plan's
// closed form, and step times equal to the whole replay's where the shortcut is taken.
#include <gtest/gtest.h>

#include "sim/engine/steady_state.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/evaluate/steady_replay.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// One rank, two compute ops per micro-batch.
TaskGraph two_ops_per_microbatch(std::int32_t microbatches) {
  TaskGraph g;
  g.ranks.resize(1);
  for (std::int32_t k = 0; k < microbatches; ++k) {
    for (double seconds : {1.0, 2.0}) {
      Op op;
      op.seconds = seconds;
      op.microbatch = k;
      g.ranks[0].ops.push_back(op);
    }
  }
  return g;
}

TEST(SteadyState, ShiftOfAPeriodicWindow) {
  const TaskGraph g = two_ops_per_microbatch(8);
  std::vector<std::vector<double>> done(1);
  for (std::size_t i = 0; i < g.ranks[0].ops.size(); ++i) {
    done[0].push_back(3.0 * static_cast<double>(i / 2) + (i % 2 == 0 ? 1.0 : 3.0));
  }
  const auto shift = steady_shift(g, done, {}, {2, 5, 1});
  ASSERT_TRUE(shift);
  EXPECT_DOUBLE_EQ(*shift, 3.0);
  // Two micro-batches apart, twice the shift.
  EXPECT_DOUBLE_EQ(*steady_shift(g, done, {}, {1, 4, 2}), 6.0);
}

TEST(SteadyState, NoShiftWhereTheWindowDoesNotRepeat) {
  const TaskGraph g = two_ops_per_microbatch(8);
  std::vector<std::vector<double>> done(1);
  for (std::size_t i = 0; i < g.ranks[0].ops.size(); ++i) {
    done[0].push_back(3.0 * static_cast<double>(i / 2) + (i % 2 == 0 ? 1.0 : 3.0));
  }
  auto late = done;
  late[0][9] += 1e-6;  // micro-batch 4's second op, inside the window
  EXPECT_FALSE(steady_shift(g, late, {}, {2, 5, 1}));
  EXPECT_TRUE(steady_shift(g, late, {}, {5, 7, 1}));  // a window past it repeats
  // Ops that differ (a stretch on one of them) are not the same op.
  std::vector<std::vector<double>> stretch(1, std::vector<double>(16, 0.0));
  stretch[0][6] = 0.5;
  EXPECT_FALSE(steady_shift(g, done, stretch, {2, 5, 1}));
  // A window with micro-batches past the step's last.
  EXPECT_FALSE(steady_shift(g, done, {}, {4, 8, 1}));
}

Plan one_f_one_b(std::int64_t pp, std::int64_t gbs) {
  Plan p;
  p.tp = 2;
  p.pp = pp;
  p.dp = 2;
  p.gbs = gbs;
  p.seq_len = 2048;
  p.sp = true;
  p.zero = 1;
  p.overlap_grad_reduce = true;
  p.tp_comm_overlap = true;
  return p;
}

TEST(SteadyReplay, ShorterPlanAndWindow) {
  // 1F1B, pp 4, 64 micro-batches: margins of pp + 1 = 5, a window as long, then one more.
  const auto r = steady_replay(one_f_one_b(4, 128));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->shorter.num_microbatches(), 16);
  EXPECT_EQ(r->window.first, 5);
  EXPECT_EQ(r->window.last, 10);
  EXPECT_EQ(r->window.period, 1);
  EXPECT_EQ(r->periods_added, 48);
  // Interleaved, the period is a group of pp micro-batches, and the shorter step keeps the
  // remainder of the last group: pp 4, vp 2, 122 micro-batches.
  Plan interleaved = one_f_one_b(4, 244);
  interleaved.vp = 2;
  interleaved.schedule = ScheduleKind::kInterleaved;
  const auto i = steady_replay(interleaved);
  ASSERT_TRUE(i);
  EXPECT_EQ(i->window.first, 12);
  EXPECT_EQ(i->window.period, 4);
  EXPECT_EQ(i->shorter.num_microbatches(), 42);  // 3 x 12 + 4, plus 2 for 122's remainder
  EXPECT_EQ(i->periods_added, 20);
  // Too short a step to gain, and GPipe, replay whole.
  EXPECT_FALSE(steady_replay(one_f_one_b(4, 60)));
  Plan gpipe = one_f_one_b(4, 128);
  gpipe.schedule = ScheduleKind::kGPipe;
  EXPECT_FALSE(steady_replay(gpipe));
  // Deferred LM-head weight gradients: within the first margin of micro-batches the shorter
  // step defers as many; deferring every one, or more than the margin, it would not.
  Plan deferring = one_f_one_b(4, 128);
  deferring.defer_embedding_wgrad_compute = true;
  deferring.wgrad_deferral_limit = 5;
  EXPECT_TRUE(steady_replay(deferring));
  deferring.wgrad_deferral_limit = 6;
  EXPECT_FALSE(steady_replay(deferring));
  deferring.wgrad_deferral_limit = 0;
  EXPECT_FALSE(steady_replay(deferring));
}

TEST(SteadyReplay, StepTimeEqualsTheWholeReplay) {
  const Model model = test::catalog_model("llama3.1-8b");
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  for (const std::int64_t pp : {2, 4, 8}) {
    for (const Recompute recompute : {Recompute::kNone, Recompute::kFull}) {
      Plan p = one_f_one_b(pp, 512);
      p.recompute = recompute;
      // With full recomputation, the LM head's weight gradient of two micro-batches deferred.
      p.defer_embedding_wgrad_compute = recompute == Recompute::kFull;
      p.wgrad_deferral_limit = p.defer_embedding_wgrad_compute ? 2 : 0;
      const Partition partition = test::uniform_partition(model, pp);
      const CostModel costs = compute_costs(model, platform, p, partition);
      const SimResult shortcut = replay(platform, p, costs, EngineKind::kAnalytic, nullptr, true);
      const SimResult whole = replay(platform, p, costs, EngineKind::kAnalytic, nullptr, false);
      SCOPED_TRACE("pp " + std::to_string(pp));
      ASSERT_TRUE(shortcut.steady_shift);  // the 1F1B steady state repeats: the shortcut was taken
      EXPECT_FALSE(whole.steady_shift);
      EXPECT_NEAR(shortcut.step_time_s, whole.step_time_s, 1e-12 * whole.step_time_s);
    }
  }
}

}  // namespace
}  // namespace trainsim
