// --nanotron-config on the command line: nanotron issue #108 read from the config a nanotron user
// launches finds what the hand-written scenario finds, flags override it, a saved scenario keeps
// its model beside itself, and bad combinations are one error line and exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::string kConfig = test::source_dir() + "/scenarios/launch/nanotron-108.yaml";

TEST(NanotronConfigCli, Issue108FromItsConfigAsFromItsScenario) {
  const auto from_config = test::run_trainsim({"check", "--nanotron-config", kConfig});
  const auto from_scenario =
      test::run_trainsim({"check", test::source_dir() + "/scenarios/seeds/nanotron-108.json"});
  EXPECT_EQ(from_config.exit_code, 1) << from_config.err;
  EXPECT_EQ(from_scenario.exit_code, 1);
  EXPECT_EQ(from_config.out, from_scenario.out);
  EXPECT_NE(from_config.out.find("[error] stage-without-parameters (stage 1)"), std::string::npos);
  EXPECT_EQ(from_config.err,
            "trainsim: --nanotron-config: the model of its model_config (no --model given)\n"
            "trainsim: --nanotron-config read as: --tp 2 --pp 2 --dp 2 --mbs 1 --gbs 8 --seq-len "
            "256 --schedule 1f1b --partition nanotron --vocab-divisible-by 1 --zero 0 --precision "
            "bf16\n");
}

TEST(NanotronConfigCli, FlagsOverrideItAndASavedScenarioRunsAgain) {
  const std::string dir = test::make_temp_dir();
  const std::string saved = dir + "/fixed.json";
  const auto fixed =
      test::run_trainsim({"run", "--nanotron-config", kConfig, "--pp", "1", "--dp", "4", "--engine",
                          "analytic", "--format", "json", "--save-scenario", saved});
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  const auto a = nlohmann::json::parse(fixed.out);
  EXPECT_EQ(a.at("plan").at("pp"), 1);
  EXPECT_EQ(a.at("gpus"), 8);
  EXPECT_EQ(nlohmann::json::parse(test::read_file(saved)).at("model"), "fixed.model.json");
  const auto rerun = test::run_trainsim({"run", saved, "--engine", "analytic", "--format", "json"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  const auto b = nlohmann::json::parse(rerun.out);
  EXPECT_EQ(a.at("plan"), b.at("plan"));
  EXPECT_EQ(a.at("step_time_s"), b.at("step_time_s"));
}

TEST(NanotronConfigCli, BadCombinationsAreOneLineAndExitTwo) {
  const auto with_scenario =
      test::run_trainsim({"check", test::default_scenario(), "--nanotron-config", kConfig});
  EXPECT_EQ(with_scenario.exit_code, 2);
  EXPECT_EQ(with_scenario.err,
            "trainsim: error: --nanotron-config: sets the whole plan: give it without a scenario "
            "(and --model M to price another model than its model_config)\n");
  const auto both = test::run_trainsim(
      {"check", "--nanotron-config", kConfig, "--megatron-args", "--bf16 --seq-length 256"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_EQ(both.err,
            "trainsim: error: --nanotron-config: is given with --megatron-args: give one launch "
            "config\n");
  const auto missing = test::run_trainsim({"check", "--nanotron-config", "/nonexistent.yaml"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "trainsim: error: --nanotron-config: no such file: /nonexistent.yaml\n");
  const auto to_stdout =
      test::run_trainsim({"check", "--nanotron-config", kConfig, "--save-scenario", "-"});
  EXPECT_EQ(to_stdout.err,
            "trainsim: error: --save-scenario: writes the model built from --nanotron-config "
            "beside the scenario: give a file, not '-'\n");
}

}  // namespace
}  // namespace trainsim
