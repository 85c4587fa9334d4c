// A training log's measured figures: the median iteration time (or throughput) after the warm-up
// interval and the largest "max allocated" of its memory reports, as Megatron-LM, nanotron and
// torchtitan print them.
#include "sim/validate/training_log.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sim/core/error.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

std::string error_of(const std::string& text) {
  try {
    (void)read_training_log(text, "t.log");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(read)";
}

// Four logged intervals: the first (4,102.3 ms, warm-up) left out, the median of 3,180, 3,100
// (its running mean after the slash not read) and 3,150; the larger of two ranks' peaks.
TEST(TrainingLog, MegatronLmsIterationLinesAndMemoryReports) {
  const TrainingLog log =
      read_training_log(test::read_file(test::data_path("training_logs/megatron.log")), "m.log");
  EXPECT_EQ(log.iteration_ms, (std::vector<double>{4102.3, 3180.0, 3100.0, 3150.0}));
  EXPECT_EQ(log.warmup, 1);
  EXPECT_DOUBLE_EQ(log.step_time_s(), 3.150);
  EXPECT_EQ(log.memory_reports, 2);
  EXPECT_DOUBLE_EQ(log.max_allocated_mib, 62000.25);
  EXPECT_EQ(log.source("m.log"),
            "m.log (median of 3 logged iteration times, the first interval left out as warm-up; "
            "largest max allocated of 2 memory reports)");
}

// Fewer than three intervals keep them all (an even count's median is the mean of the middle
// two); a log may give only one of the two figures.
TEST(TrainingLog, ShortLogsAndOneFigure) {
  const std::string line = "iteration 10 | elapsed time per iteration (ms): ";
  const TrainingLog two = read_training_log(line + "1000.0 |\n" + line + "1100.0 |\n", "t.log");
  EXPECT_EQ(two.warmup, 0);
  EXPECT_DOUBLE_EQ(two.step_time_s(), 1.05);
  EXPECT_EQ(two.memory_reports, 0);
  EXPECT_EQ(two.source("t.log"), "t.log (median of 2 logged iteration times)");
  const TrainingLog memory = read_training_log(
      "x memory (MB) | allocated: 1 | max allocated: 2048 | reserved: 3", "t.log");
  EXPECT_FALSE(memory.has_step());
  EXPECT_DOUBLE_EQ(memory.max_allocated_mib, 2048);
  EXPECT_EQ(memory.source("t.log"), "t.log (largest max allocated of 1 memory report)");
}

// nanotron's iteration lines, in its human format (three significant figures: 3.18K is 3,180
// ms) under either name it has printed the time with, and its memory lines' peak allocated.
TEST(TrainingLog, NanotronsIterationAndMemoryLines) {
  const TrainingLog log =
      read_training_log(test::read_file(test::data_path("training_logs/nanotron.log")), "n.log");
  EXPECT_EQ(log.iteration_ms, (std::vector<double>{4100.0, 3180.0, 3100.0, 3150.0}));
  EXPECT_TRUE(log.rounded);
  EXPECT_DOUBLE_EQ(log.step_time_s(), 3.150);
  EXPECT_EQ(log.memory_reports, 2);
  EXPECT_DOUBLE_EQ(log.max_allocated_mib, 61234.5);
  EXPECT_EQ(log.source("n.log"),
            "n.log (median of 3 logged iteration times (rounded to three significant figures), "
            "the first interval left out as warm-up; largest max allocated of 2 memory reports)");
}

// torchtitan's step lines (coloured): tokens/s per GPU, the first interval (step 1) left out, a
// validation step's line not read, and its memory (the allocator's reserve) not read.
TEST(TrainingLog, TorchtitansThroughputPerGpu) {
  const TrainingLog log =
      read_training_log(test::read_file(test::data_path("training_logs/torchtitan.log")), "t.log");
  EXPECT_TRUE(log.gives_throughput());
  EXPECT_EQ(log.tokens_per_s_per_gpu, (std::vector<double>{1021, 6123, 6200, 6150}));
  EXPECT_DOUBLE_EQ(log.throughput_per_gpu(), 6150);
  EXPECT_EQ(log.memory_reports, 0);
  EXPECT_EQ(log.source("t.log"),
            "t.log (median of 3 logged tokens/s per GPU, the first interval left out as warm-up)");
  // A log that also prints iteration times is timed by them.
  const TrainingLog both =
      read_training_log("step: 1 tps: 1,000\nelapsed time per iteration (ms): 2000\n", "t.log");
  EXPECT_FALSE(both.gives_throughput());
  EXPECT_TRUE(both.tokens_per_s_per_gpu.empty());
  EXPECT_DOUBLE_EQ(both.step_time_s(), 2.0);
}

TEST(TrainingLog, WhatIsNoMeasurementSaysWhere) {
  EXPECT_EQ(error_of("loss 1.0\n"),
            "t.log: holds no iteration time ('elapsed time per iteration (ms): ...', Megatron-LM's "
            "training log; 'elapsed_time_per_iteration_ms: ...', nanotron's), no throughput "
            "('step: ... tps: ...', torchtitan's) and no memory report ('| max allocated: ...', "
            "'Peak allocated ...MiB')");
  EXPECT_EQ(error_of("iteration: 1 / 9 | elapsed_time_per_iteration_ms: K |"),
            "t.log: line 1: 'elapsed_time_per_iteration_ms:' is followed by no positive number: "
            "'K |'");
  EXPECT_EQ(error_of("step: 3  tps: -"),
            "t.log: line 1: 'tps:' is followed by no positive number: '-'");
  EXPECT_EQ(error_of("a\nelapsed time per iteration (ms): nan |\n"),
            "t.log: line 2: 'elapsed time per iteration (ms):' is followed by no positive number: "
            "'nan |'");
  EXPECT_EQ(error_of("| max allocated: -5"),
            "t.log: line 1: '| max allocated:' is followed by no positive number: '-5'");
}

}  // namespace
}  // namespace trainsim
