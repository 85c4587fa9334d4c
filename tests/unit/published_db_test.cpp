// The published H100 database (platforms/h100-sxm/kernels-published.json): reproducible from
// the reference files, and what its rows give the kernels the cost model asks for.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/host/published.hpp"
#include "sim/platform/kernel_db.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const KernelDatabase& published_h100() {
  static const KernelDatabase db =
      load_kernel_database(test::source_dir() + "/platforms/h100-sxm/kernels-published.json");
  return db;
}

// The committed published database is what the generator makes from the reference files.
TEST(PublishedDb, ReproducibleFromRefdata) {
  const auto db = kernels::build_published_database(
      test::source_dir() + "/tests/validation/refdata", "tests/validation/refdata");
  EXPECT_EQ(kernel_database_json(db),
            test::read_file(test::source_dir() + "/platforms/h100-sxm/kernels-published.json"));
  EXPECT_DOUBLE_EQ(*db.meta().gemm_bf16_tflops, 794.5);
  EXPECT_DOUBLE_EQ(*db.meta().gemm_fp8_tflops, 1402.6);
  for (const auto& e : db.entries()) {
    EXPECT_EQ(e.source.rfind("tests/validation/refdata/", 0), 0u) << e.source;
  }
  // Beside the measured database, for --kernel-db.
  EXPECT_EQ(published_h100().entries().size(), 26u);  // 2 GEMM ceilings, 24 FA2 rows
}

TEST(PublishedDb, FlashAttentionRowsGiveBothPassesTheirRate) {
  const auto& db = published_h100();
  // Llama 3.1 70B at TP 4: 16 query heads, 2 KV heads, head dim 128, causal. The fwd+bwd row at
  // seq 8192 (batch 2, 16 heads, MHA) measured 308 TFLOP/s.
  AttentionShape a{1, 8192, 16, 2, 128, true, AttentionPass::kForward};
  EXPECT_NEAR(db.lookup(a)->seconds, shape_flops(a) / 308e12, 1e-15);
  a.pass = AttentionPass::kBackward;
  EXPECT_NEAR(db.lookup(a)->seconds, shape_flops(a) / 308e12, 1e-15);
  // Between rows: the rate interpolated in log sequence length (294 at 4096, 308 at 8192).
  a.seq = 6144;
  const double t = std::log2(6144.0 / 4096.0);
  const double rate = std::exp((1 - t) * std::log(294e12) + t * std::log(308e12));
  EXPECT_NEAR(db.lookup(a)->seconds, shape_flops(a) / rate, 1e-15);
  // Head dim 64, non-causal, seq 16384: 296 TFLOP/s.
  const AttentionShape b{4, 16384, 8, 8, 64, false, AttentionPass::kForward};
  EXPECT_NEAR(db.lookup(b)->seconds, shape_flops(b) / 296e12, 1e-15);
  // No row at 32k, none at head dim 192: the roofline.
  a.seq = 32768;
  EXPECT_FALSE(db.lookup(a));
  EXPECT_FALSE(db.lookup(AttentionShape{1, 8192, 8, 1, 192, true, AttentionPass::kForward}));
  // The GEMM ceiling only at the shape it was measured at.
  EXPECT_NEAR(db.lookup(GemmShape{2048, 2048, 13312})->seconds,
              2.0 * 2048 * 2048 * 13312 / 794.5e12, 1e-15);
  EXPECT_FALSE(db.lookup(GemmShape{2048, 2048, 8192}));
}

}  // namespace
}  // namespace trainsim
