// --grad-reduce-in-bf16: gradients accumulated and reduced over DP in BF16, and the fp32 copy
// of its shard the optimizer steps on; --grad-reduce-per-microbatch: a reduction after every
// micro-batch's backward.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/memory/memory.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

TEST(GradReduceInBf16, ModelStateIsMegatronsLowPrecisionGradientRow) {
  const std::int64_t p = 63808;
  const double P = 63808;
  // Megatron-LM's distributed-optimizer table, "fp16 param, fp16 grads": 2 (weight) + 2
  // (gradient) + 4 (fp32 gradient) + 4 (fp32 master) + 8 (moments) = 20 B a parameter without
  // the distributed optimizer, 4 + 16 / d with it.
  EXPECT_DOUBLE_EQ(model_state(p, 0, 8, true).total(), 20 * P);
  EXPECT_DOUBLE_EQ(model_state(p, 1, 8, true).total(), (4 + 16.0 / 8) * P);
  EXPECT_DOUBLE_EQ(model_state(p, 1, 8, true).gradients, (2 + 4.0 / 8) * P);
  // ZeRO 2 shards the BF16 gradients too.
  EXPECT_DOUBLE_EQ(model_state(p, 2, 8, true).gradients, (2 + 4.0) / 8 * P);
  // The default stays Megatron-LM's for BF16 training: fp32 gradients, 6 + 12 / d.
  EXPECT_DOUBLE_EQ(model_state(p, 1, 8).total(), (6 + 12.0 / 8) * P);
}

nlohmann::json run_report(bool bf16_grads) {
  std::vector<std::string> extra = {"--zero", "1"};
  if (bf16_grads) extra.emplace_back("--grad-reduce-in-bf16");
  return test::llama8b_report(extra);
}

double dp_bytes(const nlohmann::json& stage, const std::string& collective) {
  for (const auto& c : stage.at("collectives")) {
    if (c.at("dim") == "dp" && c.at("collective") == collective) return c.at("bytes");
  }
  ADD_FAILURE() << "no dp " << collective;
  return 0;
}

TEST(GradReduceInBf16, HalvesTheGradientReductionAndItsBuffer) {
  const auto fp32 = run_report(false);
  const auto bf16 = run_report(true);
  EXPECT_EQ(fp32.at("plan").at("grad_reduce_in_bf16"), false);
  EXPECT_EQ(bf16.at("plan").at("grad_reduce_in_bf16"), true);
  const auto& s32 = fp32.at("stages").at(0);
  const auto& s16 = bf16.at("stages").at(0);
  // The reduce-scatter moves 2-byte gradients; the parameter all-gather (BF16 weights) is as it
  // was.
  EXPECT_DOUBLE_EQ(dp_bytes(s16, "reduce_scatter"), dp_bytes(s32, "reduce_scatter") / 2);
  EXPECT_DOUBLE_EQ(dp_bytes(s16, "all_gather"), dp_bytes(s32, "all_gather"));
  const double params = s16.at("params_per_gpu");
  EXPECT_DOUBLE_EQ(s32.at("memory").at("gradients_bytes"), 4 * params);
  EXPECT_NEAR(s16.at("memory").at("gradients_bytes"), (2 + 4.0 / 8) * params, 1.0);
  EXPECT_LT(bf16.at("step_time_s").get<double>(), fp32.at("step_time_s").get<double>());
}

// --grad-reduce-per-microbatch: llama3.1-8b on dp 8, 4 micro-batches a step. Megatron-LM reduces
// the gradients once, after the last backward; PyTorch FSDP and DDP under torchtitan's gradient
// accumulation (and DeepSpeed's ZeRO-2/3) after each of the 4: four times the calls and bytes,
// each call the same; the parameter gathers are as they were.
nlohmann::json accumulating(const std::string& zero, bool per_microbatch,
                            const std::string& framework = "megatron") {
  std::vector<std::string> args = {
      "run",   "--model", "llama3.1-8b", "--platform",  "h100-sxm-ndr", "--dp",     "8",
      "--gbs", "32",      "--seq-len",   "4096",        "--engine",     "analytic", "--format",
      "json",  "--zero",  zero,          "--framework", framework};
  if (per_microbatch) args.emplace_back("--grad-reduce-per-microbatch");
  const auto r = test::run_trainsim(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

const nlohmann::json& dp_call(const nlohmann::json& report, const std::string& collective) {
  for (const auto& c : report.at("stages").at(0).at("collectives")) {
    if (c.at("dim") == "dp" && c.at("collective") == collective) return c;
  }
  static const nlohmann::json none = {{"calls", 0}, {"bytes", 0.0}};
  ADD_FAILURE() << "no dp " << collective;
  return none;
}

TEST(GradReducePerMicrobatch, ReducesAfterEveryBackward) {
  for (const auto& [zero, reduction] :
       {std::pair<std::string, std::string>{"0", "all_reduce"}, {"3", "reduce_scatter"}}) {
    const auto once = accumulating(zero, false);
    const auto each = accumulating(zero, true);
    EXPECT_FALSE(once.at("plan").contains("grad_reduce_per_microbatch"));
    EXPECT_EQ(each.at("plan").at("grad_reduce_per_microbatch"), true);
    const auto& a = dp_call(once, reduction);
    const auto& b = dp_call(each, reduction);
    EXPECT_EQ(b.at("calls").get<int>(), 4 * a.at("calls").get<int>()) << zero;
    EXPECT_DOUBLE_EQ(b.at("bytes").get<double>(), 4 * a.at("bytes").get<double>()) << zero;
    EXPECT_GT(each.at("step_time_s").get<double>(), once.at("step_time_s").get<double>()) << zero;
    if (zero == "3") {
      EXPECT_DOUBLE_EQ(dp_call(each, "all_gather").at("bytes").get<double>(),
                       dp_call(once, "all_gather").at("bytes").get<double>());
    }
  }
}

// DeepSpeed's ZeRO-2 and ZeRO-3 reduce each gradient partition in the backward hook of every
// micro-batch (stage_1_and_2.py: "if self.partition_gradients or
// self.is_gradient_accumulation_boundary()"), ZeRO-1 at the accumulation boundary only: under
// --framework deepspeed the plan prices that without the flag, and reports it.
TEST(GradReducePerMicrobatch, DeepSpeedPartitionedGradientsReduceEveryMicroBatch) {
  for (const std::string zero : {"2", "3"}) {
    const auto megatron = accumulating(zero, false);
    const auto deepspeed = accumulating(zero, false, "deepspeed");
    const auto asked = accumulating(zero, true, "deepspeed");
    EXPECT_EQ(deepspeed.at("plan").at("grad_reduce_per_microbatch"), true) << zero;
    const auto& once = dp_call(megatron, "reduce_scatter");
    const auto& each = dp_call(deepspeed, "reduce_scatter");
    EXPECT_EQ(each.at("calls").get<int>(), 4 * once.at("calls").get<int>()) << zero;
    EXPECT_DOUBLE_EQ(each.at("bytes").get<double>(), 4 * once.at("bytes").get<double>()) << zero;
    EXPECT_DOUBLE_EQ(asked.at("step_time_s").get<double>(),
                     deepspeed.at("step_time_s").get<double>())
        << zero;
  }
  const auto zero1 = accumulating("1", false, "deepspeed");
  EXPECT_FALSE(zero1.at("plan").contains("grad_reduce_per_microbatch"));
  EXPECT_DOUBLE_EQ(dp_call(zero1, "reduce_scatter").at("bytes").get<double>(),
                   dp_call(accumulating("1", false), "reduce_scatter").at("bytes").get<double>());
}

}  // namespace
}  // namespace trainsim
