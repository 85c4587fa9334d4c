// --gpu-mtbf-hours, --checkpoint-s, --restart-s: the report adds the run with failures to its time
// to train, from the same training time (sim/report/failures, checked in closed form in
// tests/unit/failures_test.cpp); a scenario may carry them, the flags override, compare gives each
// column's, a sweep each plan's, and bad values are exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "sim/report/failures.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::string kDefault = test::default_scenario();

// Llama 3's pre-training: 419 unexpected interruptions in 54 days on 16,384 GPUs, a GPU MTBF of
// 16,384 x 54 x 24 / 419 = 50,676 GPU-hours (one failure of the job every 3.1 hours).
const std::vector<std::string> kFailures = {"--tokens",       "1e12", "--gpu-mtbf-hours", "50676",
                                            "--checkpoint-s", "30",   "--restart-s",      "600"};

TEST(FailuresRun, TheReportsTrainingTimeWithFailures) {
  const auto j = test::default_scenario_report(kFailures);
  const auto& t = j.at("time_to_train");
  const auto& f = t.at("failures");
  TrainingBudget budget;
  budget.gpu_mtbf_hours = 50676;
  budget.checkpoint_s = 30;
  budget.restart_s = 600;
  const auto expected = failure_cost(budget, t.at("seconds"), j.at("step_time_s"), 256);
  ASSERT_TRUE(expected.has_value());
  EXPECT_DOUBLE_EQ(f.at("job_mtbf_s").get<double>(), 50676.0 * 3600 / 256);
  EXPECT_EQ(f.at("checkpoint_interval_steps").get<std::int64_t>(), expected->interval_steps);
  EXPECT_DOUBLE_EQ(f.at("seconds").get<double>(), expected->seconds);
  EXPECT_DOUBLE_EQ(f.at("lost_fraction").get<double>(), expected->lost);
  EXPECT_GT(f.at("seconds").get<double>(), t.at("seconds").get<double>());
  EXPECT_TRUE(f.at("finishes").get<bool>());

  auto args = kFailures;
  args.insert(args.begin(), {"run", kDefault, "--engine", "analytic"});
  const auto text = test::run_trainsim(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\nwith failures        one every 8.2 days (GPU MTBF 50,676 h over 256 "
                          "GPUs); a checkpoint every "),
            std::string::npos)
      << text.out;
  // Without an MTBF nothing is said of failures.
  EXPECT_FALSE(
      test::default_scenario_report({"--tokens", "1e12"}).at("time_to_train").contains("failures"));
}

TEST(FailuresRun, FromAScenarioOverriddenByFlagsAndSideBySide) {
  const std::string dir = test::make_temp_dir();
  auto scenario = nlohmann::json::parse(test::read_file(kDefault));
  scenario["tokens"] = 1e12;
  scenario["gpu_mtbf_hours"] = 50676;
  scenario["restart_s"] = 600;
  test::write_file(dir + "/failures.json", scenario.dump());
  const auto r = test::run_trainsim(
      {"run", dir + "/failures.json", "--engine", "analytic", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  const auto& f = report.at("time_to_train").at("failures");
  EXPECT_EQ(f.at("restart_s"), 600);
  EXPECT_EQ(f.at("checkpoint_s"), 0);
  const auto over = test::run_trainsim({"run", dir + "/failures.json", "--engine", "analytic",
                                        "--format", "json", "--restart-s", "60"});
  EXPECT_EQ(nlohmann::json::parse(over.out).at("time_to_train").at("failures").at("restart_s"), 60);

  const auto compare = [](const std::string& format) {
    auto args = kFailures;
    args.insert(args.begin(), {"compare", kDefault, "--set", "mbs=2", "--format", format});
    return test::run_trainsim(args);
  };
  const auto c = compare("json");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  for (const auto& col : nlohmann::json::parse(c.out)) {
    EXPECT_TRUE(col.at("finishes_with_failures").get<bool>());
    EXPECT_GT(col.at("time_with_failures_s").get<double>(),
              col.at("time_to_train_s").get<double>());
    EXPECT_NEAR(
        col.at("lost_to_failures").get<double>(),
        1 - col.at("time_to_train_s").get<double>() / col.at("time_with_failures_s").get<double>(),
        1e-12);
  }
  const auto t = compare("text");
  EXPECT_NE(t.out.find("\nwith failures "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("\nlost to failures "), std::string::npos) << t.out;
}

TEST(FailuresRun, BadValuesAreExit2) {
  const auto zero = test::run_trainsim({"run", kDefault, "--gpu-mtbf-hours", "0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_EQ(zero.err,
            "trainsim: error: --gpu-mtbf-hours: must be a number > 0 and <= 1e+09, got '0'\n");
  const auto negative =
      test::run_trainsim({"compare", kDefault, "--set", "mbs=2", "--checkpoint-s", "-1"});
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_EQ(negative.err,
            "trainsim: error: --checkpoint-s: must be a number >= 0 and <= 1e+09, got '-1'\n");
}

// A sweep file's failure keys give each priced plan its days with failures and the share lost,
// from the same function as run's, at the plan's step and GPUs.
TEST(FailuresRun, ASweepGivesEachPlansDaysWithFailures) {
  const std::string dir = test::make_temp_dir();
  test::write_file(
      dir + "/sweep.json",
      R"({"model": "llama3.1-8b", "gpus": [8, 64], "plan": {"seq_len": 2048, "gbs": 64, "zero": 1},)"
      R"( "vary": {"tp": [1, 2]}, "tokens": 1e12, "gpu_mtbf_hours": 50676,)"
      R"( "checkpoint_s": 30, "restart_s": 600})");
  const auto r = test::run_trainsim({"sweep", dir + "/sweep.json", "--out", dir + "/sweep.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = test::read_file(dir + "/sweep.csv");
  std::istringstream in(lines);
  std::string header, line;
  std::getline(in, header);
  const auto column = [&](const std::string& name) {
    std::istringstream h(header);
    int k = 0;
    for (std::string c; std::getline(h, c, ','); ++k) {
      if (c == name) return k;
    }
    return -1;
  };
  const auto field = [](const std::string& row, int k) {
    std::istringstream cells(row);
    std::string c;
    for (int i = 0; i <= k; ++i) std::getline(cells, c, ',');
    return c;
  };
  int priced = 0;
  while (std::getline(in, line)) {
    if (field(line, column("status")) != "ok") continue;
    ++priced;
    TrainingBudget budget;
    budget.gpu_mtbf_hours = 50676;
    budget.checkpoint_s = 30;
    budget.restart_s = 600;
    const double days = std::stod(field(line, column("days")));
    const double step = std::stod(field(line, column("step_s")));
    const auto gpus = std::stoll(field(line, column("gpus")));
    const auto f = failure_cost(budget, days * 86400, step, gpus);
    EXPECT_NEAR(std::stod(field(line, column("days_with_failures"))), f->seconds / 86400, 2e-3);
    EXPECT_NEAR(std::stod(field(line, column("lost_to_failures"))), f->lost, 1e-4);
    // GPU-hours are printed whole, and days to 0.001: f, priced from the printed days, may be off
    // by half a thousandth of a day on every GPU beyond the half hour of the rounding.
    const double days_rounding = 0.0005 * 24 * static_cast<double>(gpus) * (1 + f->lost);
    EXPECT_NEAR(std::stod(field(line, column("gpu_hours_with_failures"))), f->gpu_hours,
                0.5 + days_rounding);
    EXPECT_EQ(field(line, column("cost_with_failures")), "");  // no price
  }
  EXPECT_EQ(priced, 4);
  // The summary ranks them by what failures leave and shows the days with failures.
  EXPECT_NE(r.out.find(" plans (tokens/s less what failures take):\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("days+fail   lost  plan\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("cheapest"), std::string::npos) << r.out;  // no deadline asked for

  // A deadline lists the plans that finish within it, fewest GPU-hours with failures first; one no
  // plan meets names the fastest's days; without a token budget it is refused.
  const auto merged = [&](const std::string& days) {
    return test::run_trainsim({"sweep", "--merge", dir + "/sweep.csv", "--out", dir + "/merged.csv",
                               "--deadline-days", days});
  };
  const auto meet = merged("1e5");
  ASSERT_EQ(meet.exit_code, 0) << meet.err;
  EXPECT_NE(meet.out.find("cheapest 4 plans within 100000 days (GPU-hours with failures; 4 finish "
                          "in time):\n"),
            std::string::npos)
      << meet.out;
  EXPECT_NE(merged("1e-3").out.find("no plan finishes within 0.001 days; the fastest takes "),
            std::string::npos);
  const auto unbudgeted = test::run_trainsim(
      {"sweep", dir + "/sweep.json", "--out", dir + "/again.csv", "--deadline-days", "30"});
  EXPECT_EQ(unbudgeted.exit_code, 0) << unbudgeted.err;  // the file gives tokens
  test::write_file(dir + "/plain.json",
                   R"({"model": "llama3.1-8b", "gpus": 8, "plan": {"seq_len": 2048, "gbs": 64},)"
                   R"( "deadline_days": 30})");
  const auto refused =
      test::run_trainsim({"sweep", dir + "/plain.json", "--out", dir + "/plain.csv"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err, "trainsim: error: " + dir +
                             "/plain.json: $.deadline_days: applies to a token budget: give "
                             "--tokens too (or the file's \"tokens\")\n");

  // --svg draws the plans' days against their GPU-hours (sim/sweep/sweep_chart, tested in
  // tests/unit/sweep_chart_test.cpp); it needs days, so a sweep without tokens is refused first.
  const auto chart =
      test::run_trainsim({"sweep", "--merge", dir + "/sweep.csv", "--out", dir + "/charted.csv",
                          "--svg", dir + "/plans.svg", "--deadline-days", "30"});
  ASSERT_EQ(chart.exit_code, 0) << chart.err;
  const std::string svg = test::read_file(dir + "/plans.svg");
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("days to train with failures (log scale)"), std::string::npos);
  test::write_file(dir + "/untimed.json",
                   R"({"model": "llama3.1-8b", "gpus": 8, "plan": {"seq_len": 2048, "gbs": 64}})");
  const auto untimed = test::run_trainsim(
      {"sweep", dir + "/untimed.json", "--out", dir + "/untimed.csv", "--svg", dir + "/u.svg"});
  EXPECT_EQ(untimed.exit_code, 2);
  EXPECT_EQ(untimed.err,
            "trainsim: error: --svg: draws days against GPU-hours: give --tokens too (or the "
            "file's \"tokens\")\n");
}

}  // namespace
}  // namespace trainsim
