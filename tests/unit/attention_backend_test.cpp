// Attention backends beyond the fused kernel the database times: FlashAttention-2
// (--attention-backend flash-attn2), priced at the platform's factor over the fused kernel; and
// dropout on the attention probabilities (--attention-dropout) in the unfused backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// --attention-backend flash-attn2 (Transformer Engine with NVTE_FUSED_ATTN=0): every attention
// kernel, forward and backward, takes the platform's factor times the fused kernel's time, every
// other kernel its own; a platform without the factor refuses the backend.
TEST(CostModel, FlashAttention2IsTheFusedAttentionTimesThePlatformsFactor) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  ASSERT_TRUE(platform.flash_attn2_time_factor);
  Plan p;
  p.tp = 2;
  p.seq_len = 8192;
  const auto fused = compute_costs(m, platform, p, test::uniform_partition(m, 1));
  p.attention_backend = AttentionBackend::kFlashAttn2;
  const auto fa2 = compute_costs(m, platform, p, test::uniform_partition(m, 1));
  std::int64_t attention = 0;
  for (const auto pass : {&StageCost::forward, &StageCost::backward}) {
    const auto& a = (fused.stages[0].*pass).kernels;
    const auto& b = (fa2.stages[0].*pass).kernels;
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const bool is_attention = a[i].kind == KernelKind::kAttention;
      attention += is_attention ? 1 : 0;
      EXPECT_DOUBLE_EQ(b[i].time.seconds,
                       a[i].time.seconds * (is_attention ? *platform.flash_attn2_time_factor : 1.0))
          << a[i].name;
    }
  }
  EXPECT_EQ(attention, 2);  // the forward's and the backward's
  EXPECT_NO_THROW(validate_plan(p, m, platform, PlanOrigin{}));
  try {
    validate_plan(p, m, test::catalog_platform("a100-sxm-hdr"), PlanOrigin{});
    ADD_FAILURE() << "a100-sxm-hdr has no flash_attn2_time_factor";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("flash-attn2 needs the platform's"), std::string::npos)
        << e.what();
  }
}

const KernelCost* kernel_named(const PassCost& pass, const std::string& name) {
  for (const auto& k : pass.kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

// --attention-dropout in the unfused backend: per layer and micro-batch, PyTorch's dropout over
// the b a s^2 probabilities, reading them (2 bytes) and writing its output (2) and mask (1); its
// backward reads the gradient (2) and the mask (1) and writes the gradient (2). Both are
// roofline-timed as the softmax is (5 bytes a score element against its 4 and 6), selective
// recomputation re-runs the forward one, and nothing else changes. A fused kernel draws its mask
// inside: flash attention costs the same with dropout as without.
TEST(CostModel, AttentionDropoutIsAPassEachWayOverTheProbabilities) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform platform = test::catalog_platform("a100-sxm-hdr");
  Plan p;
  p.tp = 2;
  p.mbs = 2;
  p.seq_len = 2048;
  p.recompute = Recompute::kSelective;
  const auto part = test::uniform_partition(m, 1);
  const auto flash = compute_costs(m, platform, p, part);
  p.attention_dropout = 0.1;
  const auto flash_dropout = compute_costs(m, platform, p, part);
  EXPECT_DOUBLE_EQ(flash_dropout.stages[0].forward.seconds, flash.stages[0].forward.seconds);
  EXPECT_DOUBLE_EQ(flash_dropout.stages[0].backward.seconds, flash.stages[0].backward.seconds);

  p.attention_backend = AttentionBackend::kUnfused;
  const auto with = compute_costs(m, platform, p, part);
  p.attention_dropout = 0;
  const auto without = compute_costs(m, platform, p, part);
  const double b = 2, a = 32.0 / 2, s = 2048, scores = b * a * s * s;
  const auto& st = with.stages[0];
  const KernelCost* softmax = kernel_named(st.forward, "decoder.attention.softmax");
  const KernelCost* softmax_grad = kernel_named(st.backward, "decoder.attention.softmax.grad");
  const KernelCost* drop = kernel_named(st.forward, "decoder.attention.dropout");
  const KernelCost* drop_grad = kernel_named(st.backward, "decoder.attention.dropout.grad");
  ASSERT_TRUE(softmax && softmax_grad && drop && drop_grad);
  EXPECT_EQ(kernel_named(without.stages[0].forward, "decoder.attention.dropout"), nullptr);
  EXPECT_DOUBLE_EQ(drop->bytes, 5 * scores);
  EXPECT_DOUBLE_EQ(drop_grad->bytes, 5 * scores);
  EXPECT_EQ(drop->count, 32);
  EXPECT_EQ(drop_grad->count, 32);
  EXPECT_NEAR(drop->time.seconds, softmax->time.seconds * 5 / 4, 1e-9 * drop->time.seconds);
  EXPECT_NEAR(drop_grad->time.seconds, softmax_grad->time.seconds * 5 / 6,
              1e-9 * drop_grad->time.seconds);
  const double layers = 32;
  auto grew = [&](PassCost StageCost::*pass) {
    return (with.stages[0].*pass).seconds - (without.stages[0].*pass).seconds;
  };
  EXPECT_NEAR(grew(&StageCost::forward), layers * drop->time.seconds, 1e-9);
  EXPECT_NEAR(grew(&StageCost::recompute), layers * drop->time.seconds, 1e-9);
  EXPECT_NEAR(grew(&StageCost::backward), layers * drop_grad->time.seconds, 1e-9);
}

// The factor is the published figures' own: the median over the FlashAttention-3 paper's causal
// H100 forward points (head dim 128 and 256, sequence 512 to 16k) of cuDNN's TFLOP/s over
// FlashAttention-2's, to the platform file's three decimals.
TEST(Platform, FlashAttention2FactorIsThePublishedMedianRatio) {
  const auto j = nlohmann::json::parse(test::read_file(
      test::source_dir() + "/tests/validation/refdata/flashattention_h100_kernel_tflops.json"));
  std::map<std::pair<std::int64_t, std::int64_t>, std::map<std::string, double>> points;
  for (const auto& r : j.at("rows")) {
    if (r.at("figure").get<std::string>().rfind("flash3", 0) != 0 || !r.at("causal").get<bool>() ||
        r.at("tflops").is_null())  // null: out of memory
      continue;
    points[{r.at("head_dim").get<std::int64_t>(), r.at("seq_len").get<std::int64_t>()}]
          [r.at("impl").get<std::string>()] = r.at("tflops").get<double>();
  }
  std::vector<double> ratios;
  for (const auto& [shape, impls] : points) {
    if (impls.contains("cudnn") && impls.contains("flashattention2"))
      ratios.push_back(impls.at("cudnn") / impls.at("flashattention2"));
  }
  ASSERT_EQ(ratios.size(), 12u);
  std::sort(ratios.begin(), ratios.end());
  const double median = (ratios[5] + ratios[6]) / 2;
  EXPECT_NEAR(*test::catalog_platform("h100-sxm-ndr").flash_attn2_time_factor, median, 5e-4);
}

}  // namespace
}  // namespace trainsim
