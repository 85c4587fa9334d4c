// A token budget as a run: whole steps of gbs x seq-len tokens, their wall-clock time at the step
// time and its band, the GPU-hours and the cost, in closed form; the units a planner reads them in.
#include <gtest/gtest.h>

#include "sim/report/time_to_train.hpp"

namespace trainsim {
namespace {

TrainingBudget tokens(std::optional<double> t, std::optional<double> price = std::nullopt) {
  TrainingBudget b;
  b.tokens = t;
  b.price_per_gpu_hour = price;
  return b;
}

// Llama 3's 15.6T tokens in steps of 2,048 sequences of 8,192 tokens (16,777,216 tokens) take
// 929,833 steps (the last one partly past the budget); at 5.0 s a step on 2,048 GPUs that is
// 4,649,165 s = 53.8 days and 2,644,858 GPU-hours, at 2.5 a GPU-hour 6,612,146.
TEST(TimeToTrain, WholeStepsAtTheStepTime) {
  const auto t = time_to_train(tokens(15.6e12, 2.5), 2048.0 * 8192, 5.0, 4.8, 5.3, 2048);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->steps, 929833);  // ceil(15.6e12 / 16,777,216) = ceil(929,832.46)
  EXPECT_DOUBLE_EQ(t->seconds, 929833 * 5.0);
  EXPECT_DOUBLE_EQ(t->p10_s, 929833 * 4.8);
  EXPECT_DOUBLE_EQ(t->p90_s, 929833 * 5.3);
  EXPECT_DOUBLE_EQ(t->gpu_hours, 929833 * 5.0 * 2048 / 3600);
  ASSERT_TRUE(t->cost.has_value());
  EXPECT_DOUBLE_EQ(*t->cost, t->gpu_hours * 2.5);
  EXPECT_EQ(time_to_train_text(*t),
            "15.6T tokens in 929,833 steps of 16.8M tokens: 53.8 days (P10 51.7 days, P90 57.0 "
            "days), 2,644,858 GPU-hours, cost 6,612,146 (training steps only)");
}

// A budget that is a whole number of steps takes exactly those; one token more takes one more
// step. No tokens, no run; no price, no cost.
TEST(TimeToTrain, ABudgetOfWholeStepsAndOneTokenMore) {
  EXPECT_EQ(time_to_train(tokens(4096.0 * 1000), 4096, 1.0, 1.0, 1.0, 8)->steps, 1000);
  EXPECT_EQ(time_to_train(tokens(4096.0 * 1000 + 1), 4096, 1.0, 1.0, 1.0, 8)->steps, 1001);
  EXPECT_EQ(time_to_train(tokens(1), 4096, 1.0, 1.0, 1.0, 8)->steps, 1);
  EXPECT_FALSE(time_to_train({}, 4096, 1.0, 1.0, 1.0, 8).has_value());
  EXPECT_FALSE(time_to_train(tokens(std::nullopt, 2.5), 4096, 1.0, 1.0, 1.0, 8).has_value());
  EXPECT_FALSE(time_to_train(tokens(4096), 4096, 1.0, 1.0, 1.0, 8)->cost.has_value());
  // No band (no calibration): the line gives none.
  EXPECT_EQ(time_to_train_text(*time_to_train(tokens(4096), 4096, 30.0, 30.0, 30.0, 8)),
            "4.1K tokens in 1 step of 4.1K tokens: 30.0 s, 0 GPU-hours (training steps only)");
  // The largest budget: 1e18 tokens one at a time, in whole steps, its hours in the budget's units.
  const auto most = time_to_train(tokens(TrainingBudget::kMaxTokens, 1e9), 1, 100, 90, 110, 1e5);
  EXPECT_EQ(most->steps, 1000000000000000000);
  EXPECT_NE(time_to_train_text(*most).find("T GPU-hours, cost "), std::string::npos);
  EXPECT_EQ(time_to_train_text(*most).rfind("1000000T tokens in 1,000,000,000,000,000,000 steps of "
                                            "1 token: ",
                                            0),
            0u)
      << time_to_train_text(*most);
}

TEST(TimeToTrain, SpansInThePlannersUnits) {
  EXPECT_EQ(format_duration(45), "45.0 s");
  EXPECT_EQ(format_duration(119.9), "119.9 s");
  EXPECT_EQ(format_duration(120), "2.0 minutes");
  EXPECT_EQ(format_duration(7199), "120.0 minutes");
  EXPECT_EQ(format_duration(7200), "2.0 hours");
  EXPECT_EQ(format_duration(2 * 86400 - 1), "48.0 hours");
  EXPECT_EQ(format_duration(2 * 86400), "2.0 days");
  EXPECT_EQ(format_duration(200.55 * 86400), "200.6 days");
}

TEST(TimeToTrain, CountsInTheUnitsOfATokenBudget) {
  EXPECT_EQ(format_count(15e12), "15T");
  EXPECT_EQ(format_count(1.5e12), "1.5T");
  EXPECT_EQ(format_count(300e9), "300B");
  EXPECT_EQ(format_count(4194304), "4.19M");
  EXPECT_EQ(format_count(262144), "262K");
  EXPECT_EQ(format_count(512), "512");
  EXPECT_EQ(format_count(999.6e3), "1M");  // not "1000K"
  EXPECT_EQ(format_count(2e15), "2000T");
  // Hours and money whole, grouped, and past a quadrillion in the same units.
  EXPECT_EQ(format_whole(1232499.4), "1,232,499");
  EXPECT_EQ(format_whole(0.4), "0");
  EXPECT_EQ(format_whole(2.5e19), "25000000T");
}

}  // namespace
}  // namespace trainsim
