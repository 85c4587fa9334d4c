// trainsim validate as users run it: the reference sets, row by row, and what is not one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/check/detect.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// The largest context parallelism among a set's expressed rows ("... cp N ..." in their setup).
std::int64_t largest_cp(const nlohmann::json& set) {
  std::int64_t largest = 1;
  for (const auto& x : set["rows"]) {
    if (x.contains("skipped")) continue;
    const std::string setup = x["setup"];
    const auto at = setup.find(" cp ");
    if (at != std::string::npos)
      largest = std::max<std::int64_t>(largest, std::stoll(setup.substr(at + 4)));
  }
  return largest;
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
  EXPECT_EQ(set["expressed"], 136);  // 42 of them mixture-of-experts rows, 20 fine-tuning ones
  std::int64_t predicted = 0;
  double sum = 0;
  std::map<std::string, std::int64_t> fits;  // each row's memory verdict, as check would give it
  for (const auto& x : set["rows"]) {
    if (x.contains("skipped")) {
      EXPECT_FALSE(x["skipped"].get<std::string>().empty());
      continue;
    }
    ++predicted;
    EXPECT_TRUE(x["half"] == "fit" || x["half"] == "check") << x;
    EXPECT_GT(x["predicted_s"].get<double>(), 0.0) << x;
    sum += std::abs(x["error"].get<double>());
    const double gpu = set["gpu_memory_bytes"].get<double>();
    const double peak = x["peak_memory_bytes"].get<double>();
    const double unfragmented = x["peak_unfragmented_bytes"].get<double>();
    const std::string fit = x["memory_fit"];
    EXPECT_EQ(fit, peak <= gpu ? "yes" : unfragmented <= gpu ? "tight" : "no") << x;
    ++fits[fit];
  }
  EXPECT_EQ(predicted, 136);
  // The runs ran: one is over 80 GiB only with the fragmentation the platform assumes.
  EXPECT_EQ(fits, (std::map<std::string, std::int64_t>{{"tight", 1}, {"yes", 135}}));
  const auto& h = set["halves"];
  EXPECT_EQ(h["fit"]["rows"].get<std::int64_t>() + h["check"]["rows"].get<std::int64_t>(), 136);
  EXPECT_NEAR(h["fit"]["mean_abs_error"].get<double>() * h["fit"]["rows"].get<double>() +
                  h["check"]["mean_abs_error"].get<double>() * h["check"]["rows"].get<double>(),
              sum, 1e-9);
  EXPECT_NEAR(set["mean_abs_error"].get<double>(), sum / 136, 1e-12);
  // The largest CP a measured step was checked at: what check's cp-beyond-validation names.
  EXPECT_EQ(largest_cp(set), kLargestValidatedCp);
}

// trainsim validate against the Megatron-LM CI memory measurements in the repository: its JSON
// output, run once per test process and parsed.
struct CiMemoryRun {
  std::string printed;  // stdout
  std::string written;  // what --out wrote
  nlohmann::json set;   // the memory set
  std::map<std::string, nlohmann::json> by_name;
};

const CiMemoryRun& ci_memory_run() {
  static const CiMemoryRun run = [] {
    CiMemoryRun r;
    const std::string out = test::make_temp_dir() + "/validation.json";
    const auto result = test::run_trainsim({"validate", "--format", "json", "--out", out});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    r.printed = result.out;
    r.written = test::read_file(out);
    r.set = nlohmann::json::parse(result.out)["validation"][0];
    for (const auto& x : r.set["rows"]) r.by_name[x["name"].get<std::string>()] = x;
    return r;
  }();
  return run;
}

constexpr double kMiB = 1024.0 * 1024.0;

TEST(ValidateCiMemory, WritesWhatItPrintsAndFitsOneOverhead) {
  const CiMemoryRun& run = ci_memory_run();
  EXPECT_EQ(run.written, run.printed);
  const auto& set = run.set;
  EXPECT_EQ(set["reference"], "megatron_lm_ci_golden_values_h100.json");
  EXPECT_EQ(set["rows_total"], 139);
  EXPECT_EQ(set["expressed"], 71);
  // The overhead is fitted on the 54 dense rows; the 17 MoE rows are predicted with it.
  EXPECT_EQ(set["overhead_fit_rows"], 54);
  // The fitted overhead is one number; fitting it without each row in turn moves no figure much.
  EXPECT_LT(set["leave_one_out_mean_abs_error"].get<double>(), 0.05);
  EXPECT_LT(set["leave_one_out_max_abs_error"].get<double>(), 0.10);
  EXPECT_NEAR(set["overhead_fit_bytes"].get<double>(), set["allocated_overhead_bytes"],
              0.1 * 1024 * 1024);
  // Byte counts are whole bytes, as in the report (113.9 MiB is 119,432,806.4).
  EXPECT_TRUE(set["allocated_overhead_bytes"].is_number_integer())
      << set["allocated_overhead_bytes"];
  EXPECT_TRUE(set["overhead_fit_bytes"].is_number_integer()) << set["overhead_fit_bytes"];
  for (const auto& x : set["rows"]) {
    for (const auto& [key, value] : x.items()) {
      if (key.ends_with("_bytes")) {
        EXPECT_TRUE(value.is_number_integer()) << key << ": " << x;
      }
    }
  }
}

TEST(ValidateCiMemory, ContextParallelAndInterleavedRows) {
  const auto& set = ci_memory_run().set;
  // Context parallelism: the 11 dense CP 2 runs within 1.5 % (activations split over CP, the
  // gradients reduced over dp x cp).
  int cp_rows = 0;
  for (const auto& x : set["rows"]) {
    if (!x.contains("predicted_bytes")) continue;
    if (x["setup"].get<std::string>().find(" cp 2 ") == std::string::npos) continue;
    if (x["setup"].get<std::string>().find("experts") != std::string::npos) continue;
    if (x["setup"].get<std::string>().find("fp8") != std::string::npos) continue;
    ++cp_rows;
    EXPECT_LT(std::abs(x["error"].get<double>()), 0.015) << x;
  }
  EXPECT_EQ(cp_rows, 11);
  EXPECT_EQ(largest_cp(set), kLargestValidatedCp);  // the CP 4 run is a hybrid Mamba, skipped
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
}

TEST(ValidateCiMemory, MeetsTheMemoryTargetsOnEveryRow) {
  const auto& set = ci_memory_run().set;
  // The memory issue's targets, mean error under 5 % and max under 10 %, on every row. Two rows
  // met them only once Transformer Engine's extra cuBLAS workspaces were counted (4 of 32 MiB for
  // grouped GEMM, 3 for TP-overlapped GEMMs): the MoE row with expert TP 2 under TP 4 (-13.9 %
  // before) and the FP8 row with TP communication overlap (-10.4 % before).
  EXPECT_LT(set["mean_abs_error"].get<double>(), 0.05);
  for (const auto& x : set["rows"]) {
    if (!x.contains("predicted_bytes")) continue;
    const double error = x["error"].get<double>();
    EXPECT_LT(std::abs(error), 0.10) << x;
    if (x["name"] == "gpt3_moe_mcore_te_tp4_ep2_etp2_pp2_resume_torch_dist_dist_optimizer") {
      EXPECT_NEAR(error, -0.022, 0.01) << x;
    } else if (x["name"] ==
               "gpt3_weekly_mcore_tp2_pp2_current_scaling_native_fp8_tp_pp_sp_tp_overlap") {
      EXPECT_NEAR(error, 0.010, 0.01) << x;
    }
  }
  EXPECT_LT(set["max_abs_error"].get<double>(), 0.10);
}

TEST(ValidateCiMemory, AfterTheStepWithin25MiBButTwoRows) {
  const auto& set = ci_memory_run().set;
  // After the step the allocated bytes hold no activations, only the state and the buffers a run
  // keeps: predicted within 25 MiB on 69 of the 71 rows; the two beyond it are held where they
  // are, causes not established (if the 7B run holds its extra 1.2 GiB at the peak too, its
  // peak is -0.8 % only because its activations are priced about 0.8 GiB high).
  int close = 0;
  for (const auto& x : set["rows"]) {
    if (!x.contains("measured_after_step_bytes")) continue;
    const double d = (x["measured_after_step_bytes"].get<double>() -
                      x["predicted_after_step_bytes"].get<double>()) /
                     kMiB;
    if (x["name"] == "gpt3_7b_tp1_pp4_memory_speed") {
      EXPECT_NEAR(d, 1263.4, 5) << x;
    } else if (x["name"] == "gpt3_mcore_te_tp2_pp1_te_a2a_ovlp_8experts_etp1_ep4") {
      EXPECT_NEAR(d, 41.9, 5) << x;
    } else {
      EXPECT_LT(std::abs(d), 25) << x;
      ++close;
    }
  }
  EXPECT_EQ(close, 69);
  const auto text = test::run_trainsim({"validate"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("measured minus predicted on 71 rows: median -9.3 MiB, from -17.9 to "
                          "+1263.4 MiB; within 25 MiB on 69; beyond it: "
                          "gpt3_7b_tp1_pp4_memory_speed (+1263.4 MiB), "
                          "gpt3_mcore_te_tp2_pp1_te_a2a_ovlp_8experts_etp1_ep4 (+41.9 MiB)."),
            std::string::npos)
      << text.out;
}

TEST(ValidateCiMemory, OptimizerInstancesAndDeferralAgainstTheirTwins) {
  const auto& by_name = ci_memory_run().by_name;
  // Two distributed-optimizer instances (--num-distributed-optimizer-instances 2, dp 4): the
  // optimizer state sharded over 2 ranks, not 4. Against its one-instance twin the MoE run held
  // 344.3 MiB more at its peak and 345.1 MiB more after the step; predicted 344.7 MiB more.
  const auto& one = by_name.at(
      "gpt3_mcore_te_tp2_pp1_resume_torch_dist_te_8experts2parallel_"
      "dist_optimizer");
  const auto& two = by_name.at(
      "gpt3_mcore_te_tp2_pp1_resume_torch_dist_te_8experts2parallel_"
      "multi_dist_optimizer_instances");
  const auto delta = [&](const char* key) {
    return (two[key].get<double>() - one[key].get<double>()) / kMiB;
  };
  EXPECT_NEAR(delta("measured_bytes"), 344.3, 0.1);
  EXPECT_NEAR(delta("measured_after_step_bytes"), 345.1, 0.1);
  EXPECT_NEAR(delta("predicted_bytes"), 344.7, 0.1);
  EXPECT_NEAR(delta("predicted_after_step_bytes"), 344.7, 0.1);
  ASSERT_TRUE(
      by_name.contains("gpt3_mcore_te_tp2_pp1_resume_torch_dist_multi_dist_optimizer_"
                       "instances"));
  // --defer-embedding-wgrad-compute --wgrad-deferral-limit 2 (tp 2, pp 2, mbs 4 x 1,024): the
  // last stage keeps two micro-batches' LM-head input (4,096 x 512 BF16, 4 MiB) and logits
  // gradient (4,096 x 25,216 BF16 per TP rank, 197 MiB) to the flush: predicted 402.0 MiB above
  // its twin; measured 445.1 MiB, of which the twin's run without gradient-accumulation fusion
  // explains some (it also held 26.9 MiB less after the step, where deferral keeps nothing).
  const auto& twin = by_name.at("gpt3_mcore_te_tp2_pp2_resume_torch_dist");
  const auto& deferring =
      by_name.at("gpt3_mcore_te_tp2_pp2_resume_torch_dist_defer_embedding_wgrad_compute");
  const auto deferral = [&](const char* key) {
    return (deferring[key].get<double>() - twin[key].get<double>()) / kMiB;
  };
  EXPECT_NEAR(deferral("predicted_bytes"), 402.0, 0.05);
  EXPECT_NEAR(deferral("measured_bytes"), 445.1, 0.05);
  EXPECT_NEAR(deferral("predicted_after_step_bytes"), 0.0, 0.05);
}

TEST(ValidateCiMemory, OneRowByHand) {
  const auto& set = ci_memory_run().set;
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
  const double overhead = 113.9 * 1024 * 1024;
  EXPECT_NEAR((*row)["predicted_bytes"].get<double>(), state + saved + transient + overhead, 1.0);
  EXPECT_DOUBLE_EQ((*row)["measured_bytes"].get<double>(), 2561334272.0);
}

TEST(Cli, ValidateRejectsWhatIsNotAReferenceSet) {
  auto r = test::run_trainsim({"validate", "missing.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "trainsim: error: missing.json: no such file, folder of scenarios or catalog "
            "scenario\n");
  const std::string model = test::source_dir() + "/models/llama3.1-8b.json";
  r = test::run_trainsim({"validate", model});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("llama3.1-8b.json: neither a reference set trainsim knows (Megatron-LM CI "
                       "golden values, megatron_lm_ci_golden_values_*.json;"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace trainsim
