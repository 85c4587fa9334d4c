// Attention backends beyond the fused kernel the database times: FlashAttention-2
// (--attention-backend flash-attn2), priced at the platform's factor over the fused kernel.
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
