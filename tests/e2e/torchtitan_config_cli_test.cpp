// --torchtitan-config on the command line: the example config prices the plan its flags would,
// with the catalog model its flavor names; a setting trainsim cannot price is one error line and
// exit 2 until its flag prices it; and bad combinations are refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::string kConfig = test::source_dir() + "/scenarios/launch/torchtitan-llama3-70b.toml";

TEST(TorchtitanConfigCli, ConfigPricesThePlanItsFlagsWould) {
  const auto from_config = test::run_trainsim(
      {"run", "--torchtitan-config", kConfig, "--engine", "analytic", "--format", "json"});
  ASSERT_EQ(from_config.exit_code, 0) << from_config.err;
  EXPECT_EQ(from_config.err,
            "trainsim: --torchtitan-config read as: --tp 8 --pp 1 --dp 8 --cp 1 --sp --mbs 4 "
            "--gbs 32 --seq-len 8192 --vocab-divisible-by 1 --recompute full --zero 3 "
            "--overlap-grad-reduce --overlap-param-gather --precision bf16\n");
  const auto by_flags = test::run_trainsim({"run",
                                            "--model",
                                            "llama3.1-70b",
                                            "--gpus",
                                            "64",
                                            "--tp",
                                            "8",
                                            "--sp",
                                            "--mbs",
                                            "4",
                                            "--gbs",
                                            "32",
                                            "--seq-len",
                                            "8192",
                                            "--vocab-divisible-by",
                                            "1",
                                            "--recompute",
                                            "full",
                                            "--zero",
                                            "3",
                                            "--overlap-grad-reduce",
                                            "--overlap-param-gather",
                                            "--engine",
                                            "analytic",
                                            "--format",
                                            "json"});
  ASSERT_EQ(by_flags.exit_code, 0) << by_flags.err;
  const auto a = nlohmann::json::parse(from_config.out);
  const auto b = nlohmann::json::parse(by_flags.out);
  EXPECT_EQ(a.at("model"), "llama3.1-70b");
  EXPECT_EQ(a.at("plan"), b.at("plan"));
  EXPECT_EQ(a.at("step_time_s"), b.at("step_time_s"));
  EXPECT_EQ(a.at("gpus"), 64);
}

// The mixture-of-experts example: Qwen3-30B-A3B's flavor names the catalog model; expert
// parallelism 8 within a node, the FSDP ranks borrowed (efsdp 2), etp torchtitan's default 1.
// Each of the 48 MoE layers sends every token's 8 copies of its 2048-wide BF16 hidden state out
// and back in the forward, again in the recomputed forward and twice in the backward.
TEST(TorchtitanConfigCli, MixtureOfExpertsConfigSplitsTheExperts) {
  const auto r =
      test::run_trainsim({"run", "--torchtitan-config",
                          test::source_dir() + "/scenarios/launch/torchtitan-qwen3-moe.toml",
                          "--engine", "analytic", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err,
            "trainsim: --torchtitan-config read as: --tp 1 --pp 1 --dp 16 --cp 1 --ep 8 --etp 1 "
            "--mbs 4 --gbs 64 --seq-len 4096 --vocab-divisible-by 1 --recompute full --zero 3 "
            "--overlap-grad-reduce --overlap-param-gather\n"
            "trainsim: --torchtitan-config: torchtitan's defaults: --precision bf16\n");
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("model"), "qwen3-30b-a3b");
  bool seen = false;
  for (const auto& c : j.at("stages").at(0).at("collectives")) {
    if (c.at("dim") != "ep") continue;
    seen = true;
    EXPECT_EQ(c.at("collective"), "all_to_all");
    EXPECT_EQ(c.at("members"), 8);
    EXPECT_EQ(c.at("nodes"), 1);
    EXPECT_EQ(c.at("calls"), 48 * 6);
    EXPECT_DOUBLE_EQ(c.at("bytes").get<double>(), 48.0 * 6 * 4 * 4096 * 8 * 2048 * 2);
  }
  EXPECT_TRUE(seen);
}

TEST(TorchtitanConfigCli, WhatTrainsimCannotPriceWaitsForItsFlag) {
  const std::string dir = test::make_temp_dir();
  const std::string config = dir + "/rowwise.toml";
  std::string text = test::read_file(kConfig);
  const std::string none = "converters = []";
  text.replace(text.find(none), none.size(), "converters = [\"float8\"]");
  test::write_file(config, text + "\n[float8]\nrecipe_name = \"rowwise\"\n");
  const auto refused = test::run_trainsim({"check", "--torchtitan-config", config});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err, "trainsim: error: " + config +
                             ": $.float8.recipe_name: 'rowwise' (a scale per row) is not modelled "
                             "(tensorwise is): give --fp8-recipe to price the run as one of "
                             "trainsim's\n");
  const auto priced =
      test::run_trainsim({"check", "--torchtitan-config", config, "--fp8-recipe", "tensorwise"});
  EXPECT_EQ(priced.exit_code, 0) << priced.err;
  EXPECT_NE(priced.err.find("$.float8.recipe_name: 'rowwise' (a scale per row) is not modelled "
                            "(tensorwise is); --fp8-recipe tensorwise prices it"),
            std::string::npos)
      << priced.err;
}

TEST(TorchtitanConfigCli, BadCombinationsAreOneLineAndExitTwo) {
  const auto with_scenario =
      test::run_trainsim({"check", test::default_scenario(), "--torchtitan-config", kConfig});
  EXPECT_EQ(with_scenario.exit_code, 2);
  EXPECT_EQ(with_scenario.err,
            "trainsim: error: --torchtitan-config: sets the whole plan: give it without a "
            "scenario (and --model M to price another model than its [model] flavor)\n");
  const auto both = test::run_trainsim(
      {"check", "--torchtitan-config", kConfig, "--megatron-args", "--bf16 --seq-length 256"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_EQ(both.err,
            "trainsim: error: --torchtitan-config: is given with --megatron-args: give one "
            "launch config\n");
  const auto missing = test::run_trainsim({"check", "--torchtitan-config", "/nonexistent.toml"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "trainsim: error: --torchtitan-config: no such file: /nonexistent.toml\n");
}

}  // namespace
}  // namespace trainsim
