// --grad-reduce-in-bf16: gradients accumulated and reduced over DP in BF16, and the fp32 copy
// of its shard the optimizer steps on.
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

}  // namespace
}  // namespace trainsim
