#include <gtest/gtest.h>

#include <cstddef>

#include "sim/cost/stage_cost.hpp"
#include "sim/platform/calibration.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// Llama 3.1 8B at TP 2 on 16 GPUs, one stage.
CostModel costs_of(const Platform& platform, Precision precision) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p;
  p.tp = 2;
  p.seq_len = 4096;
  p.dp = 8;
  p.precision = precision;
  return compute_costs(m, platform, p, test::uniform_partition(m, 1));
}

// The platform's calibration scales compute-bound kernels (GEMMs, attention) only, by
// 1 / sustained_compute and the wait for the slowest of the plan's GPUs.
TEST(Calibration, ScalesComputeBoundKernels) {
  Platform platform = test::catalog_platform("h100-sxm-ndr");
  platform.calibration = Calibration{};
  const auto plain = costs_of(platform, Precision::kBF16);
  platform.calibration.sustained_compute = 0.8;
  platform.calibration.gpu_speed_spread = 0.03;
  platform.calibration.sustained_fp8_gemm = 0.5;  // no FP8 GEMM in a BF16 plan: no effect
  const auto scaled = costs_of(platform, Precision::kBF16);
  const double factor = (1 + 0.03 * expected_max_standard_normal(16)) / 0.8;
  const auto& a = plain.stages[0].forward.kernels;
  const auto& b = scaled.stages[0].forward.kernels;
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool compute = a[i].kind == KernelKind::kGemm || a[i].kind == KernelKind::kAttention;
    EXPECT_DOUBLE_EQ(b[i].time.seconds, a[i].time.seconds * (compute ? factor : 1.0)) << a[i].name;
  }
}

// sustained_fp8_gemm slows the FP8 GEMMs of an FP8 plan by its inverse on top of the common
// factor; its BF16 GEMMs (the LM head), attention and memory-bound kernels (the FP8 casts) keep
// the common factor or none.
TEST(Calibration, Fp8GemmsTakeTheirOwnSustainedRate) {
  Platform platform = test::catalog_platform("h100-sxm-ndr");
  platform.calibration = Calibration{};
  platform.calibration.sustained_compute = 0.9;
  const auto plain = costs_of(platform, Precision::kFP8);
  platform.calibration.sustained_fp8_gemm = 0.8;
  const auto scaled = costs_of(platform, Precision::kFP8);
  std::size_t fp8 = 0, other = 0;
  for (const auto pass : {&StageCost::forward, &StageCost::backward}) {
    const auto& a = (plain.stages[0].*pass).kernels;
    const auto& b = (scaled.stages[0].*pass).kernels;
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const bool fp8_gemm = is_fp8_gemm(a[i].shape);
      EXPECT_DOUBLE_EQ(b[i].time.seconds, a[i].time.seconds / (fp8_gemm ? 0.8 : 1.0)) << a[i].name;
      ++(fp8_gemm ? fp8 : other);
    }
  }
  EXPECT_GT(fp8, 0u);
  EXPECT_GT(other, 0u);
  // compute_time_factor says the same: the common factor, then 1 / sustained_fp8_gemm on top.
  EXPECT_DOUBLE_EQ(compute_time_factor(platform.calibration, 1), 1 / 0.9);
  EXPECT_DOUBLE_EQ(compute_time_factor(platform.calibration, 1, true), 1 / 0.9 / 0.8);
}

}  // namespace
}  // namespace trainsim
