// trainsim validate on one's own measured runs: scenario files whose "published" array holds the
// measured step times, each predicted as `trainsim run` predicts it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

std::string scenario_file(const std::string& name) {
  return test::source_dir() + "/scenarios/" + name + ".json";
}

nlohmann::json validate_json(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"validate"};
  all.insert(all.end(), args.begin(), args.end());
  all.insert(all.end(), {"--format", "json"});
  const auto r = test::run_trainsim(all);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out).at("validation");
}

// Each published figure is a row whose prediction is the step `trainsim run` prints for the
// scenario, and whose error is that step over the figure, less 1.
TEST(ValidateRuns, EachPublishedStepIsARowPredictedAsRunPredictsIt) {
  const std::string file = scenario_file("llama3.1-8b-cp2-8gpu");
  const auto run = test::run_trainsim({"run", file, "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const double step = nlohmann::json::parse(run.out).at("step_time_s");

  const auto sets = validate_json({file});
  ASSERT_EQ(sets.size(), 1u);
  const auto& set = sets[0];
  EXPECT_EQ(set.at("platform"), "h100-sxm-ndr");
  ASSERT_EQ(set.at("rows").size(), 2u);
  const double measured[] = {12.91, 12.27};
  const char* sources[] = {"v24.11.1", "v25.04.02"};
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& row = set.at("rows")[i];
    EXPECT_EQ(row.at("name"),
              std::string("llama3.1-8b-cp2-8gpu (NVIDIA dgxc-benchmarking ") + sources[i] + ")");
    EXPECT_EQ(row.at("setup"),
              "llama3.1-8b, tp 1, pp 1, cp 2, dp 4, zero 1, mbs 1, gbs 128, "
              "seq 8192, bf16");
    EXPECT_EQ(row.at("measured_s").get<double>(), measured[i]);
    EXPECT_NEAR(row.at("predicted_s").get<double>(), step, 1e-12);
    EXPECT_NEAR(row.at("error").get<double>(), step / measured[i] - 1, 1e-12);
    EXPECT_EQ(row.at("memory_fit"), "tight");  // as check says of this recipe
  }
  EXPECT_EQ(set.at("expressed"), 2);
  const double mean = (std::fabs(step / 12.91 - 1) + std::fabs(step / 12.27 - 1)) / 2;
  EXPECT_NEAR(set.at("mean_abs_error").get<double>(), mean, 1e-12);
  EXPECT_NEAR(set.at("mean_signed_error").get<double>(), (step / 12.91 + step / 12.27) / 2 - 1,
              1e-12);

  // By catalog name, the same rows.
  EXPECT_EQ(validate_json({"llama3.1-8b-cp2-8gpu"})[0].at("rows"), set.at("rows"));
}

// A folder: every scenario in it, one without measured step times a skipped row that says what
// to add, any other JSON file a skipped row too; --platform predicts them all on another
// platform.
TEST(ValidateRuns, AFolderOfScenariosWithAndWithoutMeasuredSteps) {
  const auto dir = test::make_temp_dir();
  std::filesystem::copy_file(scenario_file("llama3.1-8b-cp2-8gpu"), dir + "/a.json");
  std::filesystem::copy_file(scenario_file("teaching/memory"), dir + "/b.json");
  auto measured = nlohmann::json::parse(test::read_file(scenario_file("teaching/tp-nodes")));
  measured["published"] = {{{"step_time_s", 1.0}, {"source", "a test"}}};
  test::write_file(dir + "/c.json", measured.dump());
  test::write_file(dir + "/notes.txt", "not a scenario");
  test::write_file(dir + "/model.json", R"({"num_layers": 2})");
  const auto sets = validate_json({dir + "/"});
  ASSERT_EQ(sets.size(), 1u);
  const auto& rows = sets[0].at("rows");
  ASSERT_EQ(rows.size(), 5u);
  // A JSON file that is no scenario is left out, and says so.
  EXPECT_EQ(rows[4].at("name"), dir + "/model.json");
  EXPECT_EQ(rows[4].at("skipped"), "not a scenario file (an object with a \"plan\"): left out");
  EXPECT_EQ(sets[0].at("expressed"), 3);
  EXPECT_EQ(rows[3].at("name"), "teaching-tp-nodes (a test)");
  EXPECT_EQ(rows[3].at("measured_s"), 1.0);
  EXPECT_EQ(rows[2].at("name"), "teaching-memory");
  EXPECT_NE(rows[2].at("skipped").get<std::string>().find("no \"published\" figure"),
            std::string::npos);

  // Replayed two at a time, each in a process of its own: the same rows.
  EXPECT_EQ(validate_json({dir + "/", "--jobs", "2"}), sets);

  const auto h200 = validate_json({dir + "/", "--platform", "h200-sxm-ndr"});
  EXPECT_EQ(h200[0].at("platform"), "h200-sxm-ndr");
  EXPECT_NE(h200[0].at("rows")[0].at("predicted_s"), rows[0].at("predicted_s"));
}

// A figure given as tokens/s per GPU is the step its recipe's tokens take at that rate; a measured
// peak (max_allocated_gib) is a row of a memory set against the stage that allocates most, as
// `trainsim run` prints it.
TEST(ValidateRuns, ThroughputsAndPeaksAreRowsToo) {
  const auto dir = test::make_temp_dir();
  auto scenario = nlohmann::json::parse(test::read_file(scenario_file("teaching/tp-nodes")));
  scenario["published"] = {{{"tokens_per_s_per_gpu", 3000.0}, {"source", "rate"}},
                           {{"step_time_s", 1.25}, {"max_allocated_gib", 30.5}, {"source", "log"}}};
  const std::string file = dir + "/run.json";
  test::write_file(file, scenario.dump());
  const auto run = test::run_trainsim({"run", file, "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto report = nlohmann::json::parse(run.out);
  const double step = report.at("step_time_s");
  const double rate_step = 32.0 * 4096 / (16 * 3000.0);  // gbs x seq over GPUs x tokens/s
  const auto& published = report.at("published");
  EXPECT_NEAR(published.at("step_times")[0].at("step_time_s").get<double>(), rate_step, 1e-12);
  EXPECT_EQ(published.at("step_times")[0].at("tokens_per_s_per_gpu"), 3000.0);
  std::int64_t largest = 0;  // the stage that allocates most, and its peak
  for (const auto& stage : report.at("stages")) {
    largest = std::max(largest, stage.at("peak_allocated_bytes").get<std::int64_t>());
  }
  const double measured_peak = 30.5 * 1024 * 1024 * 1024;
  ASSERT_EQ(published.at("max_allocated").size(), 1u);
  EXPECT_NEAR(published.at("max_allocated")[0].at("error").get<double>(),
              static_cast<double>(largest) / measured_peak - 1, 1e-9);

  const auto sets = validate_json({file});
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0].at("quantity"), "step_time");
  const auto& steps = sets[0].at("rows");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].at("name"), "teaching-tp-nodes (rate)");
  EXPECT_NEAR(steps[0].at("measured_s").get<double>(), rate_step, 1e-12);
  EXPECT_NEAR(steps[0].at("error").get<double>(), step / rate_step - 1, 1e-12);
  EXPECT_EQ(steps[1].at("measured_s"), 1.25);
  EXPECT_EQ(sets[1].at("quantity"), "peak_memory");
  const auto& peaks = sets[1].at("rows");
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(peaks[0].at("name"), "teaching-tp-nodes (log)");
  EXPECT_EQ(peaks[0].at("stage"), 0);
  EXPECT_EQ(peaks[0].at("measured_bytes"), std::llround(measured_peak));
  EXPECT_EQ(peaks[0].at("predicted_bytes"), largest);
  EXPECT_EQ(sets[1].at("overhead_fit_rows"), 1);  // a dense model's row joins the fit

  // A plan flag changes the recipe: the figures stay as given, uncompared.
  const auto changed = test::run_trainsim({"run", file, "--gbs", "64", "--format", "json"});
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  const auto uncompared = nlohmann::json::parse(changed.out).at("published");
  EXPECT_EQ(uncompared.at("step_times")[0],
            nlohmann::json({{"tokens_per_s_per_gpu", 3000.0}, {"source", "rate"}}));
  EXPECT_FALSE(uncompared.at("max_allocated")[0].contains("error"));

  // The text report prints both beside the prediction.
  const auto text = test::run_trainsim({"run", file});
  EXPECT_NE(
      text.out.find("\npublished            2.731 s (3,000 tokens/s per GPU), rate (trainsim "),
      std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("\n                     max allocated 30.50 GiB, log (trainsim "),
            std::string::npos)
      << text.out;
}

// --measured-log: a Megatron-LM log's median iteration time and largest peak, compared with the
// run it logged and written into --save-scenario's file, which validate then reads back.
TEST(ValidateRuns, ATrainingLogIsTheRunsMeasurement) {
  const auto dir = test::make_temp_dir();
  const std::string log = test::data_path("training_logs/megatron.log");
  const std::string saved = dir + "/run.json";
  const auto run = test::run_trainsim({"run", scenario_file("teaching/tp-nodes"), "--measured-log",
                                       log, "--save-scenario", saved, "--format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto report = nlohmann::json::parse(run.out);
  const double step = report.at("step_time_s");
  const auto& published = report.at("published");
  ASSERT_EQ(published.at("step_times").size(), 1u);
  EXPECT_EQ(published.at("step_times")[0].at("step_time_s"), 3.15);
  EXPECT_NEAR(published.at("step_times")[0].at("error").get<double>(), step / 3.15 - 1, 1e-12);
  EXPECT_EQ(published.at("max_allocated")[0].at("max_allocated_bytes"),
            std::llround(62000.25 * 1024 * 1024));

  const auto scenario = nlohmann::json::parse(test::read_file(saved));
  ASSERT_EQ(scenario.at("published").size(), 1u);
  EXPECT_EQ(scenario.at("published")[0].at("step_time_s"), 3.15);
  EXPECT_DOUBLE_EQ(scenario.at("published")[0].at("max_allocated_gib").get<double>(),
                   62000.25 / 1024);
  const auto sets = validate_json({saved});
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_NEAR(sets[0].at("rows")[0].at("error").get<double>(), step / 3.15 - 1, 1e-12);
  EXPECT_EQ(sets[1].at("rows")[0].at("measured_bytes"), std::llround(62000.25 * 1024 * 1024));

  // A scenario's own figures join the log's where its recipe is unchanged, and give way where a
  // flag changes it: the log measured the run as the flags make it.
  const std::string cp2 = scenario_file("llama3.1-8b-cp2-8gpu");
  const auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {"run",      cp2,        "--measured-log", log,
                                     "--engine", "analytic", "--format",       "json"};
    args.insert(args.end(), more.begin(), more.end());
    const auto r = test::run_trainsim(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out).at("published");
  };
  EXPECT_EQ(with({}).at("step_times").size(), 3u);
  const auto changed = with({"--gbs", "64"});
  ASSERT_EQ(changed.at("step_times").size(), 1u);
  EXPECT_FALSE(changed.contains("not_compared"));
  EXPECT_TRUE(changed.at("step_times")[0].contains("error"));

  // torchtitan's tokens/s per GPU: compared as the step the plan's tokens take at that rate
  // (cp2: 128 x 8,192 tokens a step on 8 GPUs at 6,150 tokens/s each).
  const auto titan = test::run_trainsim({"run", cp2, "--measured-log",
                                         test::data_path("training_logs/torchtitan.log"),
                                         "--engine", "analytic", "--format", "json"});
  ASSERT_EQ(titan.exit_code, 0) << titan.err;
  const auto titan_step = nlohmann::json::parse(titan.out).at("published").at("step_times");
  ASSERT_EQ(titan_step.size(), 3u);
  EXPECT_EQ(titan_step[2].at("tokens_per_s_per_gpu"), 6150);
  EXPECT_DOUBLE_EQ(titan_step[2].at("step_time_s").get<double>(), 128.0 * 8192 / (8 * 6150));

  const auto missing = test::run_trainsim({"run", cp2, "--measured-log", dir + "/no.log"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--measured-log: no such file: " + dir + "/no.log"), std::string::npos)
      << missing.err;
}

// What cannot be validated against: exit 2, naming the file and what it lacks.
TEST(ValidateRuns, WhatIsNoMeasuredRunSaysWhy) {
  const auto named = test::run_trainsim({"validate", scenario_file("teaching/memory")});
  EXPECT_EQ(named.exit_code, 2);
  EXPECT_NE(named.err.find("memory.json: $.published: is missing"), std::string::npos) << named.err;

  const auto dir = test::make_temp_dir();
  test::write_file(dir + "/runs.json", R"({"rows": []})");
  const auto neither = test::run_trainsim({"validate", dir + "/runs.json"});
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.err.find("runs.json: neither a reference set trainsim knows"),
            std::string::npos)
      << neither.err;

  std::filesystem::create_directory(dir + "/empty");
  const auto empty = test::run_trainsim({"validate", dir + "/empty"});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("holds no scenario file"), std::string::npos) << empty.err;

  const auto unknown = test::run_trainsim({"validate", "no-such-runs"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no-such-runs: no such file"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace trainsim
