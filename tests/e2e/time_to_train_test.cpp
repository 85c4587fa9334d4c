// --tokens: the report turns a token budget into steps, wall-clock time with the step's band,
// GPU-hours and (with --price-per-gpu-hour) cost, from the step it predicts; the budget does not
// change the step, so a scenario's published step time is still compared; compare gives each
// plan's, and a scenario may carry its own budget.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::string kDefault = test::default_scenario();

TEST(TimeToTrain, ABudgetIsStepsOfTheReportsStepTime) {
  const auto j = test::default_scenario_report({"--tokens", "1e12", "--price-per-gpu-hour", "2.5"});
  const auto& t = j.at("time_to_train");
  const double per_step = 64.0 * 4096;  // the scenario's gbs x seq-len
  const auto steps = static_cast<std::int64_t>(std::ceil(1e12 / per_step));
  EXPECT_EQ(t.at("steps").get<std::int64_t>(), steps);  // 3,814,698
  EXPECT_EQ(t.at("tokens_per_step").get<double>(), per_step);
  const double step = j.at("step_time_s");
  EXPECT_DOUBLE_EQ(t.at("seconds").get<double>(), steps * step);
  EXPECT_DOUBLE_EQ(t.at("p10_s").get<double>(), steps * j.at("step_time_p10_s").get<double>());
  EXPECT_DOUBLE_EQ(t.at("p90_s").get<double>(), steps * j.at("step_time_p90_s").get<double>());
  EXPECT_DOUBLE_EQ(t.at("days").get<double>(), steps * step / 86400);
  EXPECT_DOUBLE_EQ(t.at("gpu_hours").get<double>(), steps * step * 256 / 3600);
  EXPECT_DOUBLE_EQ(t.at("cost").get<double>(), steps * step * 256 / 3600 * 2.5);
  // The step is the recipe's: its published figures are still compared, the step unchanged.
  EXPECT_FALSE(j.at("published").contains("not_compared"));
  EXPECT_EQ(j.at("step_time_s"), test::default_scenario_report({}).at("step_time_s"));

  const auto text =
      test::run_trainsim({"run", kDefault, "--engine", "analytic", "--tokens", "1e12"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\ntime to train        1T tokens in 3,814,698 steps of 262K tokens: "),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(" GPU-hours (training steps only)\n"), std::string::npos);
  EXPECT_EQ(text.out.find("not compared"), std::string::npos);
}

// A global batch that mbs x dp does not divide trains only the whole micro-batches (Megatron's
// gbs // (mbs x dp)): 65 sequences over dp 4 are 16 micro-batches, 64 sequences a step. The
// budget counts the tokens a step trains, as tokens/s does, not the 65 asked for.
TEST(TimeToTrain, StepsOfTheTokensAStepTrains) {
  const auto j = test::default_scenario_report({"--gbs", "65", "--tokens", "1e12"});
  const auto& t = j.at("time_to_train");
  EXPECT_EQ(t.at("tokens_per_step").get<double>(), 64.0 * 4096);
  EXPECT_EQ(t.at("steps").get<std::int64_t>(),
            static_cast<std::int64_t>(std::ceil(1e12 / (64.0 * 4096))));
  EXPECT_NEAR(j.at("tokens_per_s").get<double>() * j.at("step_time_s").get<double>(), 64.0 * 4096,
              1e-6);
}

TEST(TimeToTrain, NoBudgetNoLineAndABadOneIsExit2) {
  const auto j = test::default_scenario_report({});
  EXPECT_FALSE(j.contains("time_to_train"));
  // A price or a failure rate on the command line with no token budget to apply to is refused,
  // naming the flag; from a file it waits for a run that gives one.
  const auto price = test::run_trainsim({"run", kDefault, "--price-per-gpu-hour", "2"});
  EXPECT_EQ(price.exit_code, 2);
  EXPECT_EQ(price.err,
            "trainsim: error: --price-per-gpu-hour: applies to a token budget: give --tokens too "
            "(or the file's \"tokens\")\n");
  const auto mtbf =
      test::run_trainsim({"compare", kDefault, "--set", "mbs=2", "--gpu-mtbf-hours", "5e4"});
  EXPECT_EQ(mtbf.exit_code, 2);
  EXPECT_NE(mtbf.err.find("--gpu-mtbf-hours: applies to a token budget"), std::string::npos)
      << mtbf.err;
  const std::string dir = test::make_temp_dir();
  auto priced = nlohmann::json::parse(test::read_file(kDefault));
  priced["price_per_gpu_hour"] = 2;
  test::write_file(dir + "/priced.json", priced.dump());
  const auto file =
      test::run_trainsim({"run", dir + "/priced.json", "--engine", "analytic", "--format", "json"});
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_FALSE(nlohmann::json::parse(file.out).contains("time_to_train"));
  const auto bad = test::run_trainsim({"run", kDefault, "--tokens", "-1"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "trainsim: error: --tokens: must be a number > 0 and <= 1e+18, got '-1'\n");
  const auto text = test::run_trainsim({"compare", kDefault, "--set", "mbs=2", "--tokens", "x"});
  EXPECT_EQ(text.exit_code, 2);
  EXPECT_EQ(text.err, "trainsim: error: --tokens: must be a number > 0 and <= 1e+18, got 'x'\n");
}

// A scenario's own budget, which a flag overrides; compare prints each column's, "-" for one
// without, and its JSON the same figures.
TEST(TimeToTrain, FromAScenarioAndSideBySide) {
  const std::string dir = test::make_temp_dir();
  auto scenario = nlohmann::json::parse(test::read_file(kDefault));
  scenario["tokens"] = 2e12;
  test::write_file(dir + "/budget.json", scenario.dump());
  const auto r =
      test::run_trainsim({"run", dir + "/budget.json", "--engine", "analytic", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("time_to_train").at("tokens"), 2e12);
  const auto flag = test::run_trainsim({"run", dir + "/budget.json", "--engine", "analytic",
                                        "--format", "json", "--tokens", "1e12"});
  EXPECT_EQ(nlohmann::json::parse(flag.out).at("time_to_train").at("tokens"), 1e12);

  const auto c = test::run_trainsim({"compare", kDefault, dir + "/budget.json"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const auto row = [&](const std::string& name) {
    const auto at = c.out.find("\n" + name + " ");
    if (at == std::string::npos) return std::string();
    return c.out.substr(at + 1, c.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(row("time to train").find(" -  "), std::string::npos) << c.out;
  EXPECT_NE(row("time to train").find(" days"), std::string::npos) << c.out;
  EXPECT_NE(row("GPU-hours").find(" -  "), std::string::npos) << c.out;
  EXPECT_EQ(row("cost"), "") << c.out;  // no price

  const auto cj = nlohmann::json::parse(
      test::run_trainsim({"compare", kDefault, "--set", "mbs=2", "--tokens", "1e12",
                          "--price-per-gpu-hour", "3", "--format", "json"})
          .out);
  for (const auto& col : cj) {
    EXPECT_DOUBLE_EQ(col.at("time_to_train_s").get<double>(),
                     3814698 * col.at("step_time_s").get<double>());
    EXPECT_DOUBLE_EQ(col.at("gpu_hours").get<double>(),
                     col.at("time_to_train_s").get<double>() * 256 / 3600);
    EXPECT_DOUBLE_EQ(col.at("cost").get<double>(), col.at("gpu_hours").get<double>() * 3);
  }
}

}  // namespace
}  // namespace trainsim
