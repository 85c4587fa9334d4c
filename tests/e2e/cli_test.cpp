// The command line as users run it: the binary in a child process.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

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
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, GoldenReport,
                         ::testing::Values("llama3.1-70b-64gpu", "nemotron4-340b",
                                           "llama3.1-8b-cp2-8gpu", "qwen3-30b-a3b-16gpu",
                                           "deepseek-v3-1024gpu"),
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

// trainsim validate against NVIDIA's DGX Cloud step times: every row either predicted, in one
// half of the split, or skipped with its reason; the halves' errors add up to the whole.
TEST(Cli, ValidateDgxCloudStepTimes) {
  const std::string reference =
      test::source_dir() + "/tests/validation/refdata/nvidia_dgxc_benchmarking_h100.json";
  const auto r = test::run_trainsim({"validate", reference, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto set = nlohmann::json::parse(r.out)["validation"][0];
  EXPECT_EQ(set["rows_total"], 173);
  EXPECT_EQ(set["expressed"], 108);  // 42 of them mixture-of-experts rows
  std::int64_t predicted = 0;
  double sum = 0;
  for (const auto& x : set["rows"]) {
    if (x.contains("skipped")) {
      EXPECT_FALSE(x["skipped"].get<std::string>().empty());
      continue;
    }
    ++predicted;
    EXPECT_TRUE(x["half"] == "fit" || x["half"] == "check") << x;
    EXPECT_GT(x["predicted_s"].get<double>(), 0.0) << x;
    sum += std::abs(x["error"].get<double>());
  }
  EXPECT_EQ(predicted, 108);
  const auto& h = set["halves"];
  EXPECT_EQ(h["fit"]["rows"].get<std::int64_t>() + h["check"]["rows"].get<std::int64_t>(), 108);
  EXPECT_NEAR(h["fit"]["mean_abs_error"].get<double>() * h["fit"]["rows"].get<double>() +
                  h["check"]["mean_abs_error"].get<double>() * h["check"]["rows"].get<double>(),
              sum, 1e-9);
  EXPECT_NEAR(set["mean_abs_error"].get<double>(), sum / 108, 1e-12);
}

// trainsim validate against the Megatron-LM CI memory measurements in the repository.
TEST(Cli, ValidateMegatronCiMemory) {
  const std::string out = test::make_temp_dir() + "/validation.json";
  const auto r = test::run_trainsim({"validate", "--format", "json", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_file(out), r.out);
  const auto set = nlohmann::json::parse(r.out)["validation"][0];
  EXPECT_EQ(set["reference"], "megatron_lm_ci_golden_values_h100.json");
  EXPECT_EQ(set["rows_total"], 139);
  EXPECT_EQ(set["expressed"], 35);
  // Interleaved rows: 12 layers over pp 4 at one layer per virtual stage is vp 3, Megatron-LM's
  // micro-batch groups as the run set them; the last physical stage is measured.
  bool interleaved = false;
  for (const auto& x : set["rows"]) {
    if (x["name"] != "gpt3_mcore_te_tp1_pp4_vp1_resume_torch_dist_tunable_overlap") continue;
    interleaved = true;
    EXPECT_NE(x["setup"].get<std::string>().find("vp 3 (groups of 5)"), std::string::npos) << x;
    EXPECT_EQ(x["stage"], 3);
    EXPECT_LT(std::abs(x["error"].get<double>()), 0.01) << x;
  }
  EXPECT_TRUE(interleaved);
  // The targets: mean error under 5 %, max under 10 %.
  EXPECT_LT(set["mean_abs_error"].get<double>(), 0.05);
  EXPECT_LT(set["max_abs_error"].get<double>(), 0.10);
  // The fitted overhead is one number; fitting it without each row in turn keeps the targets.
  EXPECT_LT(set["leave_one_out_mean_abs_error"].get<double>(), 0.05);
  EXPECT_LT(set["leave_one_out_max_abs_error"].get<double>(), 0.10);
  EXPECT_NEAR(set["overhead_fit_bytes"].get<double>(), set["allocated_overhead_bytes"],
              0.1 * 1024 * 1024);
  // One row by hand: 12 layers of hidden 512, tp 1, pp 1, mbs 4 x 1024 tokens (T = 4096),
  // vocabulary 50,257 padded to 50,304, tied, learned positions, full recomputation, dropout.
  const nlohmann::json* row = nullptr;
  for (const auto& x : set["rows"]) {
    if (x["name"] == "gpt3_mcore_te_tp1_pp1_resume_torch_dist_uniform_full_recompute") row = &x;
  }
  ASSERT_NE(row, nullptr);
  const double T = 4096, h = 512, V = 50304;
  const double params = 12 * (3 * h * h + 3 * h + h * h + h + 8 * h * h + 5 * h + 4 * h) + V * h +
                        1024 * h + 2 * h;  // 64,109,568
  EXPECT_DOUBLE_EQ(params, 64109568);
  const double state = 18 * params;
  const double saved = 12 * 2 * T * h   // each layer's input (full recomputation)
                       + 8 * T + T * h  // token ids, embedding dropout mask
                       + 2 * 2 * T * h  // final norm and LM head inputs
                       + 4 * T * V;     // fp32 softmax of the loss
  const double transient = 2 * T * V;   // BF16 logits beside it while the loss runs
  const double overhead = 114.5 * 1024 * 1024;
  EXPECT_NEAR((*row)["predicted_bytes"].get<double>(), state + saved + transient + overhead, 1.0);
  EXPECT_DOUBLE_EQ((*row)["measured_bytes"].get<double>(), 2561334272.0);
}

TEST(Cli, ValidateRejectsWhatIsNotAReferenceSet) {
  auto r = test::run_trainsim({"validate", "missing.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trainsim: error: missing.json: no such file\n");
  const std::string model = test::source_dir() + "/models/llama3.1-8b.json";
  r = test::run_trainsim({"validate", model});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a reference set trainsim can validate against"), std::string::npos)
      << r.err;
}

TEST(Cli, ListShowsTheCatalog) {
  const auto r = test::run_trainsim({"list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  llama3.1-8b     8,030,261,248 parameters, 32 layers"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  h100-sxm-ndr    NVIDIA H100 SXM5 80GB, 8 per node"), std::string::npos);
  EXPECT_NE(r.out.find("36,625,618,432 active; 1 multi-token-prediction module, 11,610,068,224 "
                       "parameters more\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  llama3.1-70b-64gpu"), std::string::npos);
  // The seed scenarios (the framework failures) under their folder, and found by name.
  EXPECT_NE(r.out.find("scenarios/seeds/ (run or check them by name too):\n  colossalai-6108\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  nanotron-108\n"), std::string::npos);
  const auto seed = test::run_trainsim({"check", "nanotron-108"});
  EXPECT_EQ(seed.exit_code, 1) << seed.err;
  EXPECT_EQ(seed.out.rfind("[error] stage-without-parameters (stage 1): ", 0), 0u) << seed.out;
}

// The model's size heads the report: every parameter, and for a mixture of experts those a
// token passes through (the catalog's published counts).
TEST(Cli, ReportNamesTheParameterCount) {
  auto r = test::run_trainsim({"run", kScenario, "--engine", "analytic"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nmodel: 70,553,706,496 parameters\nplan: "), std::string::npos) << r.out;
  r = test::run_trainsim({"run", "--model", "mixtral-8x7b", "--platform", "h100-sxm-ndr", "--tp",
                          "2", "--sp", "--ep", "8", "--dp", "8", "--seq-len", "4096", "--engine",
                          "analytic"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nmodel: 46,702,792,704 parameters, 12,748,853,248 active per token\n"),
            std::string::npos)
      << r.out;
}

TEST(Cli, DumpGraphWritesTheTaskGraph) {
  const std::string path = test::make_temp_dir() + "/graph.json";
  const auto r = test::run_trainsim({"run", kScenario, "--dump-graph", path, "--full-simulation"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto g = nlohmann::json::parse(test::read_file(path));
  EXPECT_EQ(g["ranks"].size(), 64u);
}

// The Chrome trace of a replay: one GPU per stage, its passes and transfers, and a memory counter
// whose maximum is the stage's peak_memory_bytes in the report and which ends at its least (every
// activation freed). Checked on 1F1B and on an interleaved plan with recomputation, the
// distributed optimizer and overlapped parameter gathers (forward passes split into pieces).
void expect_trace_matches_report(const std::vector<std::string>& flags, std::int64_t passes) {
  const std::string path = test::make_temp_dir() + "/trace.json";
  std::vector<std::string> args = {"run", kScenario, "--format", "json", "--trace", path};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto r = test::run_trainsim(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  const auto trace = nlohmann::json::parse(test::read_file(path));
  const auto& events = trace["traceEvents"];
  const auto stages = report["stages"].size();
  for (std::size_t s = 0; s < stages; ++s) {
    double peak = 0, least = -1, last = -1, previous_ts = -1;
    std::int64_t forwards = 0, backwards = 0;
    std::set<std::string> seen;
    for (const auto& e : events) {
      if (e["pid"] != s) continue;
      if (e["ph"] == "C") {
        const double gib = e["args"]["GiB"];
        peak = std::max(peak, gib);
        if (least < 0 || gib < least) least = gib;
        last = gib;
        EXPECT_GT(e["ts"].get<double>(), previous_ts);  // one sample per instant
        previous_ts = e["ts"];
      } else if (e["ph"] == "X") {
        EXPECT_GE(e["dur"].get<double>(), 0.0);
        // A pass split into pieces (parameter gathers) counts once.
        if (e["cat"] != "forward" && e["cat"] != "backward") continue;
        const std::string pass = e["cat"].get<std::string>() + " " +
                                 e["args"]["micro-batch"].dump() + " " + e["args"]["chunk"].dump();
        if (e["cat"] == "forward" && seen.insert(pass).second) ++forwards;
        if (e["cat"] == "backward" && seen.insert(pass).second) ++backwards;
      }
    }
    const double want = report["stages"][s]["peak_memory_bytes"].get<double>() / (1 << 30);
    EXPECT_NEAR(peak, want, 1e-9 * want) << "stage " << s;
    EXPECT_NEAR(last, least, 1e-9 * least) << "stage " << s;  // back to model state alone
    EXPECT_EQ(forwards, passes) << "stage " << s;
    EXPECT_EQ(backwards, passes) << "stage " << s;
  }
}

TEST(Cli, TraceFollowsTheReplayAndTheMemoryModel) {
  expect_trace_matches_report({}, 32);  // 1F1B: 32 micro-batches
  // Interleaved, vp 2: 32 micro-batches x 2 chunks per stage.
  expect_trace_matches_report(
      {"--engine", "analytic", "--schedule", "interleaved", "--vp", "2", "--recompute", "full",
       "--sp", "--zero", "1", "--overlap-grad-reduce", "--overlap-param-gather"},
      64);
  // The same inputs give the same trace, byte for byte.
  const std::string dir = test::make_temp_dir();
  for (const char* name : {"/a.json", "/b.json"}) {
    ASSERT_EQ(test::run_trainsim({"run", kScenario, "--engine", "analytic", "--schedule", "zb-h1",
                                  "--trace", dir + name})
                  .exit_code,
              0);
  }
  EXPECT_EQ(test::read_file(dir + "/a.json"), test::read_file(dir + "/b.json"));
}

// Each op once, with its details: no two slices alike on a track, every slice's `args` naming
// what it is, an arrow from every pipeline send to its receive on the next or previous stage,
// no empty track, and one memory sample per instant.
TEST(Cli, TraceSlicesAreDistinctAndCarryTheirDetails) {
  const std::string path = test::make_temp_dir() + "/trace.json";
  const auto r = test::run_trainsim({"run", kScenario, "--engine", "analytic", "--trace", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trace = nlohmann::json::parse(test::read_file(path));
  std::set<std::tuple<std::int64_t, std::int64_t, double, std::string>> slices;
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> slices_on_track;
  std::set<std::pair<std::int64_t, std::int64_t>> named_tracks;
  std::map<std::int64_t, double> last_counter;
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> flows;  // id -> (from, to) pid
  std::int64_t sends = 0, forwards = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    const std::int64_t pid = e["pid"];
    if (ph == "X") {
      const std::int64_t tid = e["tid"];
      ++slices_on_track[{pid, tid}];
      // One slice per op: no twin with its name, track and start.
      EXPECT_TRUE(slices.insert({pid, tid, e["ts"].get<double>(), e["name"]}).second) << e.dump();
      ASSERT_TRUE(e.contains("args")) << e.dump();
      if (e["cat"] == "forward") {
        ++forwards;
        EXPECT_GT(e["args"]["GFLOP"].get<double>(), 0.0);
        EXPECT_TRUE(e["args"].contains("kernel launches by time source"));
        EXPECT_NE(e["name"].get<std::string>().find("decoder"), std::string::npos) << e.dump();
      }
      if (e["cat"] == "pp") {
        const std::int64_t peer = e["args"]["peer stage"];
        EXPECT_EQ(std::abs(peer - pid), 1) << e.dump();
        EXPECT_GT(e["args"]["MB"].get<double>(), 0.0);
        if (e["args"]["direction"] == "send") ++sends;
      }
    } else if (ph == "M" && e["name"] == "thread_name") {
      named_tracks.insert({pid, e["tid"].get<std::int64_t>()});
    } else if (ph == "C") {
      if (last_counter.count(pid)) {
        EXPECT_GT(e["ts"].get<double>(), last_counter[pid]);
      }
      last_counter[pid] = e["ts"];
    } else if (ph == "s") {
      flows[e["id"]].first = pid;
    } else if (ph == "f") {
      flows[e["id"]].second = pid;
    }
  }
  // Llama 3.1 70B at pp 4: 32 micro-batches, forwards on each of 4 stages.
  EXPECT_EQ(forwards, 4 * 32);
  for (const auto& track : named_tracks) EXPECT_GT(slices_on_track[track], 0);
  for (const auto& [track, count] : slices_on_track) EXPECT_TRUE(named_tracks.count(track));
  // Every send between the traced GPUs has its arrow: activations down and gradients up, one per
  // micro-batch and stage boundary each way.
  EXPECT_EQ(sends, 2 * 3 * 32);
  EXPECT_EQ(static_cast<std::int64_t>(flows.size()), sends);
  for (const auto& [id, ends] : flows) EXPECT_EQ(std::abs(ends.first - ends.second), 1);
}

// The start tags of `text` that begin with `prefix`, each up to its closing '>'.
std::vector<std::string> elements(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  for (auto at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    out.push_back(text.substr(at, text.find('>', at) - at + 1));
  }
  return out;
}

// The value of attribute `name` in the first tag of `element` that has it ("" when none).
std::string attribute(const std::string& element, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const auto at = element.find(key);
  if (at == std::string::npos) return "";
  const auto start = at + key.size();
  return element.substr(start, element.find('"', start) - start);
}

// The pipeline diagram drawn from the replay: per stage, one box per forward and per backward
// pass, at the trace's times on the diagram's own scale (a pass run in pieces from its first
// piece's start to its last one's end). 1F1B, then interleaved with overlapped parameter gathers.
void expect_svg_matches_trace(const std::vector<std::string>& flags, std::int64_t passes) {
  const std::string dir = test::make_temp_dir();
  std::vector<std::string> args = {"run",   kScenario,         "--engine", "analytic",
                                   "--svg", dir + "/pipe.svg", "--trace",  dir + "/trace.json"};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto r = test::run_trainsim(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string svg = test::read_file(dir + "/pipe.svg");
  const auto trace = nlohmann::json::parse(test::read_file(dir + "/trace.json"));
  const double ms_per_px = std::stod(attribute(svg, "data-ms-per-px"));
  const double origin = std::stod(attribute(svg, "data-origin-x"));
  // The trace's passes: (stage, pass, micro-batch, chunk) -> first start and last end, in ms.
  std::map<std::tuple<std::int64_t, std::string, std::int64_t, std::int64_t>,
           std::pair<double, double>>
      want;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || (e["cat"] != "forward" && e["cat"] != "backward")) continue;
    const auto key = std::make_tuple(e["pid"].get<std::int64_t>(), e["cat"].get<std::string>(),
                                     e["args"]["micro-batch"].get<std::int64_t>(),
                                     e["args"]["chunk"].get<std::int64_t>());
    const double start = e["ts"].get<double>() / 1e3, end = start + e["dur"].get<double>() / 1e3;
    auto [it, fresh] = want.try_emplace(key, start, end);
    if (!fresh) it->second = {std::min(it->second.first, start), std::max(it->second.second, end)};
  }
  std::map<std::pair<std::int64_t, std::string>, std::int64_t> boxes;
  for (const std::string& b : elements(svg, "<rect class=\"pass ")) {
    const std::string kind = attribute(b, "class");
    if (kind != "pass F" && kind != "pass B") continue;
    const std::string pass = kind == "pass F" ? "forward" : "backward";
    const auto key = std::make_tuple(std::stoll(attribute(b, "data-stage")), pass,
                                     std::stoll(attribute(b, "data-mb")),
                                     std::stoll(attribute(b, "data-chunk")));
    ASSERT_TRUE(want.count(key)) << b;
    const auto [start, end] = want[key];
    EXPECT_NEAR(std::stod(attribute(b, "x")), origin + start / ms_per_px, 0.01) << b;
    EXPECT_NEAR(std::stod(attribute(b, "width")), (end - start) / ms_per_px, 0.01) << b;
    ++boxes[{std::get<0>(key), pass}];
  }
  EXPECT_EQ(svg.find("merged"), std::string::npos);
  for (std::int64_t s = 0; s < 4; ++s) {
    EXPECT_EQ((boxes[{s, "forward"}]), passes) << "stage " << s;
    EXPECT_EQ((boxes[{s, "backward"}]), passes) << "stage " << s;
  }
}

TEST(Cli, PipelineDiagramMatchesTheReplay) {
  expect_svg_matches_trace({}, 32);
  expect_svg_matches_trace({"--schedule", "interleaved", "--vp", "2", "--sp", "--zero", "1",
                            "--overlap-grad-reduce", "--overlap-param-gather"},
                           64);
}

// The report as one page that opens with no network: nothing fetched (no script, stylesheet,
// image source, import or url()), the only URL the SVG namespace; the summary, the pipeline
// diagram, a row and a memory curve per stage, and the diagnostics.
TEST(Cli, HtmlReportIsSelfContained) {
  const std::string path = test::make_temp_dir() + "/report.html";
  const auto r = test::run_trainsim(
      {"run", kScenario, "--engine", "analytic", "--format", "json", "--html", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  const std::string html = test::read_file(path);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* external : {"<script", "<link", "src=", "@import", "url(", "https://"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  std::string rest = html;
  for (auto at = rest.find("http://"); at != std::string::npos; at = rest.find("http://", at + 1)) {
    EXPECT_EQ(rest.compare(at, 26, "http://www.w3.org/2000/svg"), 0) << rest.substr(at, 40);
  }
  char step[32];
  std::snprintf(step, sizeof step, "%.3f s (P10-P90", report["step_time_s"].get<double>());
  EXPECT_NE(html.find(step), std::string::npos) << step;
  EXPECT_NE(html.find("<rect class=\"pass F\""), std::string::npos);  // the pipeline diagram
  const auto stages = report["stages"].size();
  std::size_t curves = 0;
  for (auto at = html.find("<polyline"); at != std::string::npos;
       at = html.find("<polyline", at + 1)) {
    ++curves;
  }
  EXPECT_EQ(curves, stages);
  for (std::size_t s = 0; s < stages; ++s) {
    EXPECT_NE(html.find("stage " + std::to_string(s) + ": peak "), std::string::npos) << s;
  }
  EXPECT_NE(html.find("<h2>Diagnostics</h2>"), std::string::npos);
}

// Plans side by side: each column's step is the one `trainsim run` gives for the same inputs, the
// diagrams share one time axis, and bad --set values are exit 2 naming the flag.
TEST(Cli, CompareShowsPlansSideBySide) {
  const std::string dir = test::make_temp_dir();
  const auto r = test::run_trainsim({"compare", kScenario, "--set", "schedule=interleaved,vp=2",
                                     "--format", "json", "--html", dir + "/compare.html"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto columns = nlohmann::json::parse(r.out);
  ASSERT_EQ(columns.size(), 2u);
  EXPECT_EQ(columns[1]["label"], "schedule=interleaved,vp=2");
  EXPECT_EQ(columns[1]["plan"]["vp"], 2);
  const std::vector<std::vector<std::string>> runs = {{},
                                                      {"--schedule", "interleaved", "--vp", "2"}};
  for (std::size_t c = 0; c < runs.size(); ++c) {
    std::vector<std::string> args = {"run", kScenario, "--engine", "analytic", "--format", "json"};
    args.insert(args.end(), runs[c].begin(), runs[c].end());
    const auto run = test::run_trainsim(args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto report = nlohmann::json::parse(run.out);
    EXPECT_DOUBLE_EQ(columns[c]["step_time_s"].get<double>(), report["step_time_s"].get<double>());
    EXPECT_DOUBLE_EQ(columns[c]["tokens_per_s"].get<double>(),
                     report["tokens_per_s"].get<double>());
  }
  // One time axis: every diagram on the page has the same scale.
  const std::string html = test::read_file(dir + "/compare.html");
  std::set<std::string> scales;
  std::size_t diagrams = 0;
  for (const std::string& svg : elements(html, "<svg ")) {
    scales.insert(attribute(svg, "data-ms-per-px"));
    ++diagrams;
  }
  EXPECT_EQ(diagrams, 2u);
  EXPECT_EQ(scales.size(), 1u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // SimGrid runs one simulation per process: refused up front, not a crash at the second column.
  const auto simgrid = test::run_trainsim(
      {"compare", kScenario, "--set", "schedule=interleaved,vp=2", "--engine", "simgrid"});
  EXPECT_EQ(simgrid.exit_code, 2);
  EXPECT_EQ(simgrid.err.rfind("trainsim: error: --engine: compare replays its columns on the "
                              "analytic engine",
                              0),
            0u)
      << simgrid.err;
  // Bad input: exit 2, the flag named.
  const auto bad = test::run_trainsim({"compare", kScenario, "--set", "tpp=2"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--set: 'tpp' is not a plan field"), std::string::npos) << bad.err;
  EXPECT_EQ(test::run_trainsim({"compare", kScenario}).exit_code, 2);
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

namespace trainsim {
namespace {

// DeepSeek-V3's recipe options from the command line: the multi-token-prediction module the
// model trains (its parameters beside the published count, in the text and in the JSON) and
// selective recomputation by module, named in both.
TEST(Cli, MultiTokenPredictionAndRecomputeModulesInTheReport) {
  const std::vector<std::string> args = {"run",
                                         "--model",
                                         "deepseek-v3",
                                         "--platform",
                                         "h100-sxm-ndr",
                                         "--tp",
                                         "2",
                                         "--sp",
                                         "--pp",
                                         "2",
                                         "--dp",
                                         "4",
                                         "--ep",
                                         "8",
                                         "--etp",
                                         "1",
                                         "--seq-len",
                                         "4096",
                                         "--gbs",
                                         "8",
                                         "--engine",
                                         "analytic",
                                         "--recompute",
                                         "selective",
                                         "--recompute-modules",
                                         "mlp,mla_up_proj"};
  const auto text = test::run_trainsim(args);
  ASSERT_LE(text.exit_code, 1) << text.err;
  EXPECT_NE(text.out.find("model: 671,026,419,200 parameters, 36,625,618,432 active per token; 1 "
                          "multi-token-prediction module with 11,610,068,224 parameters more\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("selective recompute (mla_up_proj,mlp)"), std::string::npos);
  EXPECT_NE(text.out.find("decoder 30-59, mtp 0, final_norm, lm_head, loss"), std::string::npos)
      << text.out;
  auto json_args = args;
  json_args.insert(json_args.end(), {"--format", "json", "--mtp-num-layers", "2"});
  const auto json = test::run_trainsim(json_args);
  ASSERT_LE(json.exit_code, 1) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["mtp_num_layers"], 2);
  EXPECT_EQ(j["mtp_params"].get<std::int64_t>(), 2 * std::int64_t{11'610'068'224});
  EXPECT_EQ(j["plan"]["recompute_modules"], "mla_up_proj,mlp");
}

}  // namespace
}  // namespace trainsim
