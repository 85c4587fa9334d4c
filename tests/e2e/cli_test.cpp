// The command line as users run it: the binary in a child process.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::string kScenario = test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json";

TEST(Cli, RunsAScenario) {
  const auto r = test::run_trainsim({"run", kScenario});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("llama3.1-70b on h100-sxm-ndr (64 GPUs, 8 nodes)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("step time"), std::string::npos);
  EXPECT_NE(r.out.find("MFU"), std::string::npos);
}

// A step under 0.1 s reads in ms or us, not as "0.000 s", in the text report and the HTML page:
// nanotron #108's toy model takes about half a millisecond.
TEST(Cli, ShortStepReadsInMicroseconds) {
  const std::string seed = test::source_dir() + "/scenarios/seeds/nanotron-108.json";
  const auto text = test::run_trainsim({"run", seed});
  const auto json = test::run_trainsim({"run", seed, "--format", "json"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const double step = nlohmann::json::parse(json.out).at("step_time_s").get<double>();
  ASSERT_LT(step, 1e-3);
  char expected[64];
  std::snprintf(expected, sizeof expected, "step time            %.1f us (P10 ", step * 1e6);
  EXPECT_NE(text.out.find(expected), std::string::npos) << expected << "\n" << text.out;
  // The HTML page's summary alike.
  const std::string html = test::make_temp_dir() + "/report.html";
  ASSERT_EQ(test::run_trainsim({"run", seed, "--html", html}).exit_code, 0);
  std::snprintf(expected, sizeof expected, "<tr><th>step time</th><td>%.1f us (P10-P90 ",
                step * 1e6);
  EXPECT_NE(test::read_file(html).find(expected), std::string::npos) << expected;
}

TEST(Cli, JsonIsByteIdenticalAcrossRuns) {
  const auto a = test::run_trainsim({"run", kScenario, "--format", "json"});
  const auto b = test::run_trainsim({"run", kScenario, "--format", "json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_FALSE(a.out.empty());
}

// Golden reports: headline numbers of the default scenario and of Nemotron-4 340B (interleaved,
// sequence parallel, distributed optimizer, every overlap), to 1e-6 relative. Regenerate with
// tests/data/golden/regenerate.sh after an intended model change, and say why in the commit.
std::string scenario_test_name(const ::testing::TestParamInfo<std::string>& param) {
  std::string name;
  for (char c : param.param) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

class GoldenReport : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenReport, MatchesWithinTolerance) {
  const auto r = test::run_trainsim(
      {"run", test::source_dir() + "/scenarios/" + GetParam() + ".json", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = nlohmann::json::parse(r.out);
  const auto want =
      nlohmann::json::parse(test::read_file(test::data_path("golden/" + GetParam() + ".json")));
  EXPECT_EQ(got["plan"], want["plan"]);
  for (const char* key : {"step_time_s", "tokens_per_s", "model_tflops_per_gpu", "mfu",
                          "bubble_fraction", "compute_s"}) {
    const double w = want[key];
    EXPECT_NEAR(got[key].get<double>(), w, 1e-6 * std::abs(w)) << key;
  }
  for (const char* section : {"exposed_comm_s", "overlapped_comm_s"}) {
    for (const char* kind : {"tp", "pp", "dp", "cp", "ep"}) {
      const double w = want[section][kind];
      EXPECT_NEAR(got[section][kind].get<double>(), w, 1e-6 * std::abs(w) + 1e-12)
          << section << " " << kind;
    }
  }
  ASSERT_EQ(got["stages"].size(), want["stages"].size());
  for (std::size_t s = 0; s < want["stages"].size(); ++s) {
    EXPECT_EQ(got["stages"][s]["blocks"], want["stages"][s]["blocks"]);
    EXPECT_EQ(got["stages"][s]["params_per_gpu"], want["stages"][s]["params_per_gpu"]);
    for (const char* key : {"compute_s", "peak_memory_bytes"}) {
      const double w = want["stages"][s][key];
      EXPECT_NEAR(got["stages"][s][key].get<double>(), w, 1e-6 * w) << key;
    }
    // Byte counts are whole bytes (an expert's mean tokens, a runtime fraction, round).
    EXPECT_TRUE(got["stages"][s]["peak_memory_bytes"].is_number_integer());
    for (const auto& [key, value] : got["stages"][s]["memory"].items()) {
      EXPECT_TRUE(value.is_number_integer()) << key;
    }
    for (const auto& c : got["stages"][s]["collectives"]) {
      EXPECT_TRUE(c["bytes"].is_number_integer()) << c.dump();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, GoldenReport,
                         ::testing::Values("llama3.1-70b-64gpu", "nemotron4-340b",
                                           "llama3.1-8b-cp2-8gpu", "qwen3-30b-a3b-16gpu",
                                           "deepseek-v3-1024gpu", "llama3-70b-lora-8gpu"),
                         scenario_test_name);

TEST(Cli, FlagsOverrideTheScenario) {
  const auto r =
      test::run_trainsim({"run", kScenario, "--pp", "2", "--dp", "8", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["plan"]["pp"], 2);
  EXPECT_EQ(j["plan"]["dp"], 8);
  EXPECT_EQ(j["plan"]["tp"], 4);
  EXPECT_EQ(j["stages"].size(), 2u);
  // The attention backend is a plan field like the others: echoed, and the unfused core is
  // slower than the fused kernel on the same plan.
  const auto flash =
      test::run_trainsim({"run", kScenario, "--engine", "analytic", "--format", "json"});
  const auto unfused = test::run_trainsim({"run", kScenario, "--engine", "analytic", "--format",
                                           "json", "--attention-backend", "unfused"});
  ASSERT_EQ(unfused.exit_code, 0) << unfused.err;
  const auto jf = nlohmann::json::parse(flash.out), ju = nlohmann::json::parse(unfused.out);
  EXPECT_EQ(jf["plan"]["attention_backend"], "flash");
  EXPECT_EQ(ju["plan"]["attention_backend"], "unfused");
  EXPECT_GT(ju["step_time_s"].get<double>(), jf["step_time_s"].get<double>());
  EXPECT_EQ(test::run_trainsim({"run", kScenario, "--attention-backend", "fused"}).exit_code, 2);
}

// Flags alone, with no --platform: the default platform, named in the report, gives the same
// prediction as naming it.
TEST(Cli, FlagsWithoutAPlatformRunOnTheDefaultOne) {
  const std::vector<std::string> flags = {
      "run",       "--model", "llama3.1-8b", "--gpus",   "8",        "--gbs", "16",
      "--seq-len", "4096",    "--engine",    "analytic", "--format", "json"};
  const auto plain = test::run_trainsim(flags);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  auto named = flags;
  named.insert(named.end(), {"--platform", "h100-sxm-ndr"});
  const auto j = nlohmann::json::parse(plain.out);
  EXPECT_EQ(j["platform"], "h100-sxm-ndr");
  EXPECT_EQ(j["step_time_s"], nlohmann::json::parse(test::run_trainsim(named).out)["step_time_s"]);
}

// The rank order decides which links a group uses: with dp innermost the four DP ranks share a
// node (NVLink) and each TP group of 4 spans two nodes (two rail rings, half the bytes over the
// network), so TP time grows and DP time shrinks, each by far more than any other effect could
// explain.
TEST(Cli, RankOrderDecidesWhichLinksAGroupUses) {
  auto exposed = [](const char* order) {
    const auto r = test::run_trainsim(
        {"run", kScenario, "--engine", "analytic", "--format", "json", "--rank-order", order});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["plan"]["rank_order"], order);
    return j["exposed_comm_s"];
  };
  const auto megatron = exposed("tp-cp-ep-dp-pp"), dp_first = exposed("dp-tp-cp-ep-pp");
  EXPECT_GT(dp_first["tp"].get<double>(), 3 * megatron["tp"].get<double>());
  EXPECT_LT(3 * dp_first["dp"].get<double>(), megatron["dp"].get<double>());
  EXPECT_NEAR(dp_first["pp"].get<double>(), megatron["pp"].get<double>(), 1e-9);
}

TEST(Cli, FlagFormWithoutScenario) {
  const auto r = test::run_trainsim(
      {"run", "--model", "llama3.1-8b", "--platform", "h100-sxm-ndr", "--tp", "2", "--pp", "2",
       "--dp", "2", "--gbs", "16", "--seq-len", "4096", "--schedule", "gpipe", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpus"], 8);
  EXPECT_EQ(j["plan"]["schedule"], "gpipe");
  EXPECT_EQ(j["model_params"], 8030261248LL);
}

// Without --dp, --gpus sets dp to the GPUs tp x cp x pp leave over, as a sweep's plans have it;
// with --dp given, --gpus must agree with it (tests/data/bad/cases.json); a scenario's gpus
// without dp follow a flag that changes tp.
TEST(Cli, GpusWithoutDpLeaveDpTheRest) {
  const auto r =
      test::run_trainsim({"run", "--model", "llama3.1-8b", "--platform", "h100-sxm-ndr", "--tp",
                          "2", "--cp", "2", "--gpus", "32", "--gbs", "64", "--seq-len", "8192",
                          "--engine", "analytic", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpus"], 32);
  EXPECT_EQ(j["plan"]["dp"], 8);  // 32 / (2 x 2 x 1)
  const std::string dir = test::make_temp_dir();
  test::write_file(dir + "/gpus.json", R"({"model": "llama3.1-8b", "platform": "h100-sxm-ndr",)"
                                       R"( "plan": {"gpus": 16, "gbs": 32, "seq_len": 4096}})");
  const auto over = test::run_trainsim(
      {"run", dir + "/gpus.json", "--tp", "4", "--engine", "analytic", "--format", "json"});
  ASSERT_EQ(over.exit_code, 0) << over.err;
  EXPECT_EQ(nlohmann::json::parse(over.out)["plan"]["dp"], 4);
}

TEST(Cli, HuggingFaceConfigAsModel) {
  const auto r = test::run_trainsim({"run", "--model", test::data_path("hf/qwen2-0.5b/config.json"),
                                     "--platform", "h100-sxm-ndr", "--tp", "2", "--dp", "4",
                                     "--seq-len", "2048", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["model_params"], 494032768);
}

TEST(Cli, OutWritesBothReports) {
  const std::string dir = test::make_temp_dir() + "/reports";
  const auto r = test::run_trainsim({"run", kScenario, "--out", dir, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_file(dir + "/report.json"), r.out);
  EXPECT_NE(test::read_file(dir + "/report.txt").find("step time"), std::string::npos);
}

TEST(Cli, EnginesAgreeOnTheDefaultScenario) {
  const auto s = test::run_trainsim({"run", kScenario, "--format", "json"});
  const auto a = test::run_trainsim({"run", kScenario, "--format", "json", "--engine", "analytic"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const double ts = nlohmann::json::parse(s.out)["step_time_s"];
  const double ta = nlohmann::json::parse(a.out)["step_time_s"];
  EXPECT_NEAR(ta, ts, 1e-9 * ts);
}

TEST(Cli, CheckAndHelp) {
  auto r = test::run_trainsim(
      {"check", kScenario, "--tp", "8", "--dp", "2", "--vocab-divisible-by", "32", "--sp"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "no diagnostics: the plan looks sound\n");
  r = test::run_trainsim({"check", kScenario, "--gbs", "8", "--sp", "--zero", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[warning] microbatches-fewer-than-stages"), std::string::npos) << r.out;
  // Error-level diagnostics make check exit 1, and run too with --strict.
  const std::string seed = test::source_dir() + "/scenarios/seeds/nanotron-108.json";
  r = test::run_trainsim({"check", seed});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("[error] stage-without-parameters (stage 1)"), std::string::npos) << r.out;
  EXPECT_EQ(test::run_trainsim({"run", seed}).exit_code, 0);
  EXPECT_EQ(test::run_trainsim({"run", seed, "--strict"}).exit_code, 1);
  r = test::run_trainsim({"run", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--seq-len"), std::string::npos);
  r = test::run_trainsim({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("exit codes"), std::string::npos);
  // check's help names every diagnostic it can report (sim/check and the neighbourhood).
  r = test::run_trainsim({"check", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  std::string help = r.out.substr(0, r.out.find("Inputs and output:"));
  for (char& c : help) c = c == '\n' ? ' ' : c;
  for (const char* id : {"stage-without-parameters",
                         "empty-stage",
                         "layers-dropped",
                         "gbs-not-divisible",
                         "oom",
                         "stage-imbalance",
                         "microbatches-fewer-than-stages",
                         "uneven-tp-shard",
                         "tp-across-nodes",
                         "cp-ring-exposed",
                         "expert-imbalance",
                         "ep-across-nodes",
                         "expert-tp-split",
                         "ep-a2a-exposed",
                         "pp-exchanges-exposed",
                         "sequence-past-trained-positions",
                         "unmodelled-config-key",
                         "tp-comm-overlap-dropped",
                         "zero-unsharded",
                         "faster-plan-nearby"}) {
    EXPECT_NE(help.find(id), std::string::npos) << id;
  }
}

// Llama 3.1 70B on one DGX H100 node without any sharding: 18 bytes per parameter alone are
// 1.16 TiB per GPU. The report gives every stage's peak and an oom error whose fix fits.
TEST(Cli, Llama70bOnEightGpusIsOutOfMemory) {
  const std::vector<std::string> args = {
      "run",  "--model",  "llama3.1-70b", "--platform", "h100-sxm-ndr", "--tp", "1",
      "--pp", "1",        "--dp",         "8",          "--seq-len",    "8192", "--gbs",
      "8",    "--format", "json"};
  auto r = test::run_trainsim(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["stages"].size(), 1u);
  // 70,553,706,496 parameters x (2 + 4 + 4 + 8) bytes, before activations and runtime terms.
  const double state = 18.0 * 70553706496.0;
  EXPECT_EQ(j["stages"][0]["params_per_gpu"], 70553706496LL);
  EXPECT_GT(j["stages"][0]["peak_memory_bytes"].get<double>(), state);
  const nlohmann::json* oom = nullptr;
  for (const auto& d : j["diagnostics"]) {
    if (d["id"] == "oom") oom = &d;
  }
  ASSERT_NE(oom, nullptr) << r.out;
  EXPECT_EQ((*oom)["severity"], "error");
  EXPECT_EQ((*oom)["stage"], 0);
  const std::string message = (*oom)["message"];
  EXPECT_NE(message.find("stage 0 needs "), std::string::npos) << message;
  EXPECT_NE(message.find("more than the GPU's 80.00 GiB"), std::string::npos) << message;
  EXPECT_NE(message.find("model state 1.16 TiB"), std::string::npos) << message;
  // Nothing on 8 GPUs fits (even ZeRO-3 leaves 18 / 8 bytes of 70.6B parameters, 148 GiB), so
  // the fix is the smallest cluster that does, with its simulated step time.
  const std::string fix = (*oom)["fix"];
  EXPECT_NE(fix.find("no plan on 8 GPUs fits; the smallest cluster that does has 32 GPUs"),
            std::string::npos)
      << fix;
  EXPECT_NE(fix.find("step "), std::string::npos) << fix;
  // Text report: a peak memory column, and --strict turns the error into exit code 1.
  std::vector<std::string> text(args.begin(), args.end() - 2);
  r = test::run_trainsim(text);
  EXPECT_NE(r.out.find("peak mem"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[error] oom (stage 0)"), std::string::npos) << r.out;
  text.push_back("--strict");
  EXPECT_EQ(test::run_trainsim(text).exit_code, 1);
}

// A report's plan is a scenario's plan: each catalog scenario's report, its model, platform and
// plan read back as a scenario, prices the same step and writes the same plan (every field as
// the scenario reader takes it: a layout partition as written, the pipeline exchanges' overlap
// outside the interleaved schedule as the schedule fixes it).
TEST(Cli, AReportsPlanRunsAgainAsAScenario) {
  const auto dir = test::make_temp_dir();
  for (const char* name : {"llama3.1-70b-64gpu", "nemotron4-340b", "llama3.1-8b-cp2-8gpu",
                           "qwen3-30b-a3b-16gpu", "deepseek-v3-1024gpu", "llama3-70b-lora-8gpu"}) {
    SCOPED_TRACE(name);
    const auto first =
        test::run_trainsim({"run", test::source_dir() + "/scenarios/" + name + ".json", "--format",
                            "json", "--engine", "analytic"});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    const auto j = nlohmann::json::parse(first.out);
    test::write_file(
        dir + "/again.json",
        nlohmann::json{{"model", j["model"]}, {"platform", j["platform"]}, {"plan", j["plan"]}}
            .dump());
    const auto again = test::run_trainsim(
        {"run", dir + "/again.json", "--format", "json", "--engine", "analytic"});
    ASSERT_EQ(again.exit_code, 0) << again.err;
    const auto k = nlohmann::json::parse(again.out);
    EXPECT_EQ(k["plan"], j["plan"]);
    EXPECT_EQ(k["step_time_s"], j["step_time_s"]);
  }
}

TEST(Cli, InterleavedReportGroupsChunksByStage) {
  const auto r = test::run_trainsim({"run", kScenario, "--schedule", "interleaved", "--vp", "2",
                                     "--format", "json", "--engine", "analytic"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["plan"]["vp"], 2);
  EXPECT_EQ(j["plan"]["overlap_p2p_comm"], true);  // Megatron-LM's default with interleaving
  EXPECT_EQ(j["plan"]["microbatch_group_size_per_vp_stage"], 4);
  ASSERT_EQ(j["stages"].size(), 4u);
  // Stage 1 holds virtual stages 1 and 5: decoders 10-19 and 50-59.
  const auto& s1 = j["stages"][1];
  EXPECT_EQ(s1["chunks"][0]["virtual_stage"], 1);
  EXPECT_EQ(s1["chunks"][1]["virtual_stage"], 5);
  EXPECT_EQ(s1["chunks"][1]["blocks"], nlohmann::json::array({"decoder 50-59"}));
  EXPECT_EQ(s1["layers"], 20);
}

TEST(Cli, HelpTeachesTheSchedules) {
  const auto r = test::run_trainsim({"run", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* flag : {"zb-h1", "--vp", "--recompute", "--overlap-grad-reduce",
                           "--overlap-param-gather", "--tp-comm-overlap", "--no-overlap-p2p-comm",
                           "--microbatch-group-size-per-vp-stage", "--sp", "--zero"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace trainsim
