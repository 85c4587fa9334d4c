// The activation timeline (sim/memory/timeline.hpp): what a GPU holds over a step, walked from
// its compute order, whatever the schedule: chunks, micro-batches in flight at the peak under
// 1F1B, interleaved 1F1B and ZB-H1, and the deferred LM-head buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/memory/timeline.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {
namespace {

TEST(MemoryTimeline, WalksAnyComputeOrderWithChunks) {
  // Two model chunks per GPU, as an interleaved program would give: chunk 0 keeps 10 bytes per
  // micro-batch, chunk 1 keeps 100 and needs 1,000 more while its forward runs.
  const std::vector<PassFootprint> f = {{10, 0, 0}, {100, 1000, 5}};
  const std::vector<ComputeStep> steps = {
      {Pass::kForward, 0, 0},  {Pass::kForward, 0, 1},  {Pass::kForward, 1, 0},
      {Pass::kBackward, 0, 1}, {Pass::kForward, 1, 1},  {Pass::kBackward, 0, 0},
      {Pass::kBackward, 1, 1}, {Pass::kBackward, 1, 0},
  };
  const ActivationTimeline t = walk_activations(steps, f, 7);
  EXPECT_EQ(t.after_step, (std::vector<double>{17, 117, 127, 27, 127, 117, 17, 7}));
  // The second forward of chunk 1, with micro-batch 1 of chunk 0 and micro-batch 0 of chunk 0
  // still held: 7 + 10 + 10 + 100 + 1,000.
  EXPECT_DOUBLE_EQ(t.peak, 1127);
  EXPECT_EQ(t.peak_step, 4);
  EXPECT_EQ(t.peak_in_flight, 3);
  EXPECT_THROW(walk_activations({{Pass::kBackward, 0, 0}}, f), std::logic_error);
  EXPECT_THROW(walk_activations({{Pass::kForward, 0, 2}}, f), std::logic_error);
  EXPECT_THROW(walk_activations({{Pass::kForward, 0, 0}, {Pass::kForward, 0, 0}}, f),
               std::logic_error);
}

// Deferring the LM head's weight gradient (--defer-embedding-wgrad-compute, limit 2 of 3): each of
// the first two backwards keeps 50 bytes to the flush; the peak, in the third forward, holds one
// of them and says so.
TEST(MemoryTimeline, CountsTheDeferredBuffersAtThePeak) {
  PassFootprint f{10, 100, 0};
  f.deferred = 50;
  f.deferrals = 2;
  const std::vector<ComputeStep> one_f_one_b = {
      {Pass::kForward, 0, 0}, {Pass::kForward, 1, 0},  {Pass::kBackward, 0, 0},
      {Pass::kForward, 2, 0}, {Pass::kBackward, 1, 0}, {Pass::kBackward, 2, 0},
  };
  const ActivationTimeline t = walk_activations(one_f_one_b, {f}, 7);
  EXPECT_EQ(t.after_step, (std::vector<double>{17, 27, 67, 77, 117, 107}));
  // The third forward: base 7, micro-batches 1 and 2 held (20), one deferral (50), transient 100.
  EXPECT_DOUBLE_EQ(t.peak, 177);
  EXPECT_EQ(t.peak_step, 3);
  EXPECT_DOUBLE_EQ(t.peak_deferred, 50);
  EXPECT_EQ(t.peak_deferrals, 1);
  // Without the forward's transient the peak comes in the last backward, both deferrals held.
  f.forward_transient = 0;
  const ActivationTimeline end = walk_activations(one_f_one_b, {f}, 7);
  EXPECT_DOUBLE_EQ(end.peak, 117);  // 7 + micro-batch 2's 10 + 2 x 50
  EXPECT_EQ(end.peak_step, 5);
  EXPECT_EQ(end.peak_deferrals, 2);
  EXPECT_DOUBLE_EQ(end.peak_deferred, 100);
}

TEST(MemoryTimeline, ComputeStepsOfAProgramSkipExchanges) {
  const auto program = stage_program({PipelineSchedule::k1F1B, 2, 3}, 0);
  const auto steps = compute_steps(program);
  ASSERT_EQ(steps.size(), 6u);
  EXPECT_EQ(steps[0].pass, Pass::kForward);
  EXPECT_EQ(steps[1].pass, Pass::kForward);
  EXPECT_EQ(steps[1].microbatch, 1);
  EXPECT_EQ(steps[2].pass, Pass::kBackward);
  EXPECT_EQ(steps[2].microbatch, 0);
}

// Micro-batch chunks in flight at the peak when every chunk keeps one byte.
std::int64_t peak_in_flight(const ScheduleConfig& config, std::int64_t stage) {
  const std::vector<PassFootprint> unit(static_cast<std::size_t>(config.chunks), {1, 0, 0});
  const ActivationTimeline t = walk_activations(compute_steps(stage_program(config, stage)), unit);
  EXPECT_DOUBLE_EQ(t.peak, static_cast<double>(t.peak_in_flight));
  EXPECT_DOUBLE_EQ(t.after_step.back(), 0.0);  // every activation freed by the end of the step
  return t.peak_in_flight;
}

TEST(MemoryTimeline, InterleavedHoldsItsWarmupPlusOne) {
  // Megatron-LM's interleaved 1F1B: stage s warms up (p - s - 1) x 2 + (v - 1) x group forwards
  // (group = p by default), then alternates one forward and one backward: warm-up + 1 chunks of
  // micro-batches are in flight at its peak, capped at all m x v of them.
  for (const auto& [p, m, v] : std::vector<std::array<std::int64_t, 3>>{
           {4, 8, 2}, {4, 12, 3}, {2, 6, 4}, {8, 16, 2}, {4, 4, 2}}) {
    const ScheduleConfig c{PipelineSchedule::kInterleaved, p, m, v};
    for (std::int64_t s = 0; s < p; ++s) {
      const std::int64_t warmup = (p - s - 1) * 2 + (v - 1) * p;
      EXPECT_EQ(peak_in_flight(c, s), std::min(warmup + 1, m * v))
          << "p " << p << " m " << m << " v " << v << " stage " << s;
    }
  }
}

TEST(MemoryTimeline, ZeroBubbleH1HoldsTheFirstStagesCountOnEveryStage) {
  // ZB-H1 keeps a micro-batch's activations until its weight gradient. Stage s warms up p - s - 1
  // forwards, then defers s weight gradients: p micro-batches in flight on every stage, where 1F1B
  // holds p - s. The peak over the stages is 1F1B's (Qi et al.: H1 needs no more memory than
  // 1F1B), later stages hold more.
  for (const auto& [p, m] :
       std::vector<std::array<std::int64_t, 2>>{{4, 8}, {4, 4}, {8, 16}, {3, 7}}) {
    for (std::int64_t s = 0; s < p; ++s) {
      EXPECT_EQ(peak_in_flight({PipelineSchedule::k1F1B, p, m}, s), std::min(p - s, m));
      EXPECT_EQ(peak_in_flight({PipelineSchedule::kZBH1, p, m}, s), std::min(p, m))
          << "p " << p << " m " << m << " stage " << s;
    }
  }
}

}  // namespace
}  // namespace trainsim
