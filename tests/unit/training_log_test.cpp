// A training log's measured figures: the median iteration time after the warm-up interval and the
// largest "max allocated" of its memory reports, as Megatron-LM prints them.
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

TEST(TrainingLog, WhatIsNoMeasurementSaysWhere) {
  EXPECT_EQ(error_of("loss 1.0\n"),
            "t.log: holds no iteration time ('elapsed time per iteration (ms): ...', Megatron-LM's "
            "training log) and no memory report ('| max allocated: ...')");
  EXPECT_EQ(error_of("a\nelapsed time per iteration (ms): nan |\n"),
            "t.log: line 2: 'elapsed time per iteration (ms):' is followed by no positive number: "
            "'nan |'");
  EXPECT_EQ(error_of("| max allocated: -5"),
            "t.log: line 1: '| max allocated:' is followed by no positive number: '-5'");
}

}  // namespace
}  // namespace trainsim
