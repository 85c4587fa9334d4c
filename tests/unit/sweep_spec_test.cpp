// A sweep file's plans: their numbering and order (GPUs and platforms outermost, the last key
// fastest), each plan's data parallelism, a scenario as the start of a sweep, and bad values named
// by their JSON path.
#include <gtest/gtest.h>

#include <filesystem>

#include "sim/cli/sweep_platform_flag.hpp"
#include "sim/cli/sweep_spec.hpp"
#include "sim/core/error.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

std::string sweep_file(const std::string& body) {
  const std::string path = test::make_temp_dir() + "/sweep.json";
  test::write_file(path, body);
  return path;
}

const char* kSweep = R"({"model": "llama3.1-8b", "gpus": [8, 16],
  "plan": {"seq_len": 4096, "gbs": 64, "zero": 1},
  "vary": {"tp": [1, 2, 4], "pp": [1, 3], "recompute": ["none", "full"]}})";

TEST(SweepSpec, NumbersPlansGpusOutermostLastKeyFastest) {
  const SweepSpec spec = load_sweep_spec(sweep_file(kSweep));
  ASSERT_EQ(sweep_size(spec), 2 * 3 * 2 * 2);
  const SweepPoint p = sweep_point(spec, 0);
  EXPECT_EQ(p.gpus, 8);
  EXPECT_EQ(p.fields.at("tp"), "1");
  EXPECT_EQ(p.fields.at("pp"), "1");
  EXPECT_EQ(p.fields.at("recompute"), "none");
  EXPECT_EQ(p.fields.at("gbs"), "64");
  EXPECT_EQ(sweep_point(spec, 1).fields.at("recompute"), "full");
  EXPECT_EQ(sweep_point(spec, 2).fields.at("pp"), "3");
  EXPECT_EQ(sweep_point(spec, 4).fields.at("tp"), "2");
  const SweepPoint last = sweep_point(spec, 23);
  EXPECT_EQ(last.gpus, 16);
  EXPECT_EQ(last.fields.at("tp"), "4");
  EXPECT_EQ(last.fields.at("pp"), "3");
  EXPECT_EQ(last.fields.at("recompute"), "full");
}

// Several platforms, each with its price: the platform is the outermost digit of a plan's number,
// so that the first platform's plans keep the numbers a sweep of it alone gives them.
TEST(SweepSpec, SeveralPlatformsNumberOutermostEachWithItsPrice) {
  const SweepSpec spec = load_sweep_spec(sweep_file(
      R"({"model": "llama3.1-8b", "gpus": [8, 16], "platform": ["h100-sxm-ndr", "h200-sxm-ndr"],
          "price_per_gpu_hour": {"h100-sxm-ndr": 2.5, "h200-sxm-ndr": 3.5},
          "vary": {"tp": [1, 2, 4]}, "tokens": 1e12})"));
  ASSERT_EQ(spec.platforms.size(), 2u);
  EXPECT_EQ(spec.platforms[1].file.stem(), "h200-sxm-ndr");
  EXPECT_EQ(spec.platforms[0].price_per_gpu_hour, 2.5);
  EXPECT_EQ(spec.platforms[1].price_per_gpu_hour, 3.5);
  EXPECT_FALSE(spec.budget.price_per_gpu_hour);  // each platform's, not one for all
  EXPECT_EQ(platform_names(spec), "h100-sxm-ndr and h200-sxm-ndr");
  ASSERT_EQ(sweep_size(spec), 2 * 2 * 3);
  EXPECT_EQ(sweep_point(spec, 5).platform, 0u);
  EXPECT_EQ(sweep_point(spec, 5).gpus, 16);
  EXPECT_EQ(sweep_point(spec, 6).platform, 1u);
  EXPECT_EQ(sweep_point(spec, 6).gpus, 8);
  EXPECT_EQ(sweep_point(spec, 6).fields.at("tp"), "1");
  EXPECT_EQ(sweep_point(spec, 11).fields.at("tp"), "4");
}

TEST(SweepSpec, DataParallelismIsWhatTheGpusLeave) {
  const SweepSpec spec = load_sweep_spec(sweep_file(kSweep));
  // 16 GPUs, tp 4, pp 1: dp 4.
  const auto plan = sweep_plan(sweep_point(spec, 12 + 8));
  ASSERT_TRUE(std::holds_alternative<Plan>(plan));
  EXPECT_EQ(std::get<Plan>(plan).dp, 4);
  EXPECT_EQ(std::get<Plan>(plan).world_size(), 16);
  // 8 GPUs, tp 1, pp 3: refused by rule, the plan kept with dp 0.
  const auto refused = sweep_plan(sweep_point(spec, 2));
  ASSERT_TRUE(std::holds_alternative<SweepRow>(refused));
  const SweepRow& row = std::get<SweepRow>(refused);
  EXPECT_EQ(row.status, SweepStatus::kRule);
  EXPECT_EQ(row.reason, "gpus: tp x cp x pp = 3 does not divide 8 GPUs");
  EXPECT_EQ(row.plan->dp, 0);
}

// A sweep may start from a scenario: its model, platform, plan fields but dp, and GPU count, the
// sweep's own keys over them.
TEST(SweepSpec, AScenarioIsTheStartOfASweep) {
  const auto file = std::filesystem::path(test::make_temp_dir()) / "s.json";
  const SweepSpec spec = parse_sweep_spec(
      R"({"scenario": "llama3.1-8b-cp2-8gpu", "plan": {"zero": 0}, "vary": {"cp": [1, 2]}})", file);
  EXPECT_EQ(spec.model.stem(), "llama3.1-8b");
  ASSERT_EQ(spec.platforms.size(), 1u);
  EXPECT_EQ(spec.platforms[0].file.stem(), "h100-sxm-ndr");
  EXPECT_EQ(spec.gpus, (std::vector<std::int64_t>{8}));
  EXPECT_EQ(spec.fixed.at("seq_len"), "8192");
  EXPECT_EQ(spec.fixed.at("cp_comm_type"), "p2p");
  EXPECT_EQ(spec.fixed.at("zero"), "0");    // the sweep's plan over the scenario's
  EXPECT_FALSE(spec.fixed.contains("dp"));  // what each GPU count leaves
  EXPECT_FALSE(spec.fixed.contains("cp"));  // varied
  // The sweep's own model and GPU counts over the scenario's.
  const SweepSpec own = parse_sweep_spec(
      R"({"scenario": "llama3.1-8b-cp2-8gpu", "model": "llama3-8b", "gpus": [16, 32]})", file);
  EXPECT_EQ(own.model.stem(), "llama3-8b");
  EXPECT_EQ(own.gpus, (std::vector<std::int64_t>{16, 32}));
  EXPECT_THROW(parse_sweep_spec(R"({"scenario": "no-such-scenario"})", file), InputError);
}

TEST(SweepSpec, BadValuesAreInputErrorsNamingTheirPath) {
  const auto message = [](const std::string& body) {
    try {
      load_sweep_spec(sweep_file(body));
    } catch (const InputError& e) {
      const std::string what = e.what();
      return what.substr(what.find(": ") + 2);
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"model": "llama3.1-8b", "gpus": 8, "vary": {"tpp": [1]}})"),
            "$.vary.tpp: unknown plan field");
  EXPECT_EQ(message(R"({"model": "llama3.1-8b", "gpus": 8, "vary": {"schedule": ["1f1b", "x"]}})"),
            "$.vary.schedule[1]: must be one of {gpipe, 1f1b, interleaved, zb-h1}, got 'x'");
  EXPECT_EQ(message(R"({"model": "llama3.1-8b", "gpus": [8, 0]})"),
            "$.gpus[1]: must be a positive integer, got 0");
  EXPECT_EQ(
      message(R"({"model": "llama3.1-8b", "gpus": 8, "plan": {"tp": 2}, "vary": {"tp": [4]}})"),
      "$.vary.tp: is also fixed in $.plan");
  EXPECT_EQ(message(R"({"model": "llama3.1-8b", "gpus": 8, "vary": {"tp": []}})"),
            "$.vary.tp: must be a non-empty list");
  EXPECT_EQ(message(R"({"model": "llama3.1-8b", "gpus": 8, "platform": ["h100-sxm-ndr",
            "h100-sxm-ndr"]})"),
            "$.platform[1]: is named twice");
  EXPECT_EQ(message(R"({"model": "llama3.1-8b", "gpus": 8, "platform": []})"),
            "$.platform: must be a platform (a name or path) or a non-empty list of them, got []");
  EXPECT_EQ(message(R"({"model": "llama3.1-8b", "gpus": 8, "platform": ["h100-sxm-ndr",
            "h200-sxm-ndr"], "price_per_gpu_hour": {"h100-sxm-ndr": 2.5}})")
                .rfind("$.price_per_gpu_hour.h200-sxm-ndr: required key is missing", 0),
            0u);
  EXPECT_EQ(message(R"({"model": "llama3.1-8b", "gpus": 8, "price_per_gpu_hour": {"x": 2}})"),
            "$.price_per_gpu_hour: gives each platform its price: name them in \"platform\"");
  EXPECT_EQ(message(R"({"model": "llama3.1-8b", "gpus": 8, "platform": "h100-sxm-ndr",
            "price_per_gpu_hour": {"h100-sxm-ndr": 2, "h200": 3}})")
                .rfind("$.price_per_gpu_hour.h200: unknown key", 0),
            0u);
}

// --platform NAME[=PRICE],...: the file's platforms replaced, each at the flag's price, else at
// the file's price for it; what cannot be read is named by the flag.
TEST(SweepSpec, PlatformFlagReplacesTheFilesPlatforms) {
  const SweepSpec spec = parse_sweep_spec(R"({"model": "llama3.1-8b", "gpus": 8,
      "platform": ["h100-sxm-ndr", "h200-sxm-ndr"],
      "price_per_gpu_hour": {"h100-sxm-ndr": 2.5, "h200-sxm-ndr": 3.5}})",
                                          test::source_dir() + "/sweep.json");
  const auto kept = flag_platforms("h200-sxm-ndr", spec, false);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].file.stem(), "h200-sxm-ndr");
  EXPECT_EQ(kept[0].price_per_gpu_hour, 3.5);  // the file's price for it
  const auto priced = flag_platforms("h200-sxm-ndr=4,h100-sxm-ndr=2", spec, false);
  ASSERT_EQ(priced.size(), 2u);
  EXPECT_EQ(priced[0].price_per_gpu_hour, 4.0);
  EXPECT_EQ(priced[1].file.stem(), "h100-sxm-ndr");
  EXPECT_EQ(priced[1].price_per_gpu_hour, 2.0);
  // --price-per-gpu-hour sets one for all: no per-platform price is looked up.
  EXPECT_FALSE(flag_platforms("a100-sxm-hdr", spec, true)[0].price_per_gpu_hour);
  const auto message = [&](const std::string& text, bool price_flag = false) {
    try {
      flag_platforms(text, spec, price_flag);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  EXPECT_EQ(message("h100-sxm-ndr,,h200-sxm-ndr").rfind("--platform: has an empty platform", 0),
            0u);
  EXPECT_EQ(message("h100-sxm-ndr,h100-sxm-ndr"), "--platform: names h100-sxm-ndr twice");
  EXPECT_EQ(message("h100-sxm-ndr=2,h200-sxm-ndr").rfind("--platform: gives some platforms", 0),
            0u);
  EXPECT_EQ(message("h100-sxm-ndr=0").rfind("--platform: ", 0), 0u);
  EXPECT_EQ(message("h100-sxm-ndr=2", true),
            "--price-per-gpu-hour: sets one price for all, and --platform gives each its own: "
            "give one of them");
  EXPECT_NE(message("a100-sxm-hdr").find("a100-sxm-hdr has no price in "), std::string::npos);
  EXPECT_EQ(message("h999").rfind("--platform: ", 0), 0u);
}

}  // namespace
}  // namespace trainsim
