// The recipe's switches reach the plan, the report and the numbers from the command line:
// --attention-dropout, --hidden-dropout, --cross-entropy-loss-fusion.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

double activations(const nlohmann::json& report) {
  return report.at("stages").at(0).at("memory").at("activations_bytes").get<double>();
}

// Megatron-Core's fused cross-entropy holds a second fp32 copy of the logits while the loss runs:
// 4 bytes x 4,096 tokens x 128,256 vocabulary rows on the one stage; the step is unchanged.
TEST(RecipeFlags, FusedCrossEntropyHoldsASecondFp32CopyOfTheLogits) {
  const auto plain = test::llama8b_report({});
  const auto fused = test::llama8b_report({"--cross-entropy-loss-fusion"});
  EXPECT_FALSE(plain.at("plan").contains("cross_entropy_loss_fusion"));
  EXPECT_EQ(fused.at("plan").at("cross_entropy_loss_fusion"), true);
  EXPECT_DOUBLE_EQ(activations(fused) - activations(plain), 4.0 * 4096 * 128256);
  EXPECT_DOUBLE_EQ(fused.at("step_time_s").get<double>(), plain.at("step_time_s").get<double>());
}

// Hidden dropout keeps a 1-byte mask per block (two a layer, 32 layers) and the embedding's, each
// 4,096 x 4,096 bytes; attention dropout changes nothing under flash attention. Both are in the
// report's plan.
TEST(RecipeFlags, DropoutReachesThePlanAndTheMemory) {
  const auto plain = test::llama8b_report({});
  const auto dropout =
      test::llama8b_report({"--hidden-dropout", "0.1", "--attention-dropout", "0.1"});
  EXPECT_DOUBLE_EQ(dropout.at("plan").at("hidden_dropout").get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(dropout.at("plan").at("attention_dropout").get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(activations(dropout) - activations(plain), (2.0 * 32 + 1) * 4096 * 4096);
  EXPECT_GT(dropout.at("step_time_s").get<double>(), plain.at("step_time_s").get<double>());
}

}  // namespace
}  // namespace trainsim
