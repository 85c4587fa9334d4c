// Host side of the CUDA kernel suite: shapes from the catalog, grids, statistics, databases.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "kernels/host/database.hpp"
#include "kernels/host/shapes.hpp"
#include "kernels/host/stats.hpp"
#include "sim/core/error.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/plan/partition.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

bool contains(const std::vector<KernelShape>& shapes, const KernelShape& s) {
  return std::find(shapes.begin(), shapes.end(), s) != shapes.end();
}

TEST(KernelSuiteStats, MedianAndPercentiles) {
  std::vector<double> x = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  const auto s = kernels::summarize(x);
  EXPECT_EQ(s.count, 10u);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.p10, 1.9);  // position 0.9 between the 1st and 2nd smallest
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(kernels::quantile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(kernels::quantile({4}, 0.9), 4);
  EXPECT_THROW(kernels::quantile({}, 0.5), std::invalid_argument);
  EXPECT_THROW(kernels::quantile({1, 2}, 1.5), std::invalid_argument);
}

TEST(KernelSuiteStats, RotatingSetsReadMoreThanL2) {
  const double MiB = 1024.0 * 1024.0, L2 = 50 * MiB, plenty = 1e12;
  EXPECT_EQ(kernels::rotating_sets(10 * MiB, L2, plenty), 10);  // 100 MiB = 2 x L2
  EXPECT_EQ(kernels::rotating_sets(30 * MiB, L2, plenty), 4);
  EXPECT_EQ(kernels::rotating_sets(200 * MiB, L2, plenty), 1);   // one set already exceeds L2
  EXPECT_EQ(kernels::rotating_sets(10 * MiB, L2, 35 * MiB), 3);  // what fits in the budget
  EXPECT_EQ(kernels::rotating_sets(1024, L2, plenty), 64);       // capped
  EXPECT_EQ(kernels::rotating_sets(10 * MiB, L2, 1 * MiB), 1);
}

TEST(KernelSuiteShapes, Llama8bAtTp2) {
  const Model m = test::catalog_model("llama3.1-8b");
  const auto shapes = kernels::model_shapes(m, 2, 1, 8192, Precision::kBF16);
  // QKV: [8192 x 4096] @ [4096 x (2048 + 2 x 512)]; its data and weight gradients.
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 3072, 4096}));
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 4096, 3072}));
  EXPECT_TRUE(contains(shapes, GemmShape{4096, 3072, 8192}));
  // Output projection, gated MLP up (gate and up: 2 x 14336 / 2), down, LM head (128256 / 2).
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 4096, 2048}));
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 14336, 4096}));
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 4096, 7168}));
  EXPECT_TRUE(contains(shapes, GemmShape{8192, 64128, 4096}));
  EXPECT_TRUE(contains(shapes, AttentionShape{1, 8192, 16, 4, 128, true, AttentionPass::kForward}));
  EXPECT_TRUE(
      contains(shapes, AttentionShape{1, 8192, 16, 4, 128, true, AttentionPass::kBackward}));
  EXPECT_TRUE(contains(shapes, MemoryShape{"rmsnorm", 8192, 4096}));
  EXPECT_TRUE(contains(shapes, MemoryShape{"swiglu.grad", 8192, 7168}));
  EXPECT_TRUE(contains(shapes, MemoryShape{"rope", 8192, 2048 + 512}));
  EXPECT_TRUE(contains(shapes, MemoryShape{"cross_entropy", 8192, 64128}));
  const auto n_gemm = std::count_if(shapes.begin(), shapes.end(), [](const KernelShape& s) {
    return std::holds_alternative<GemmShape>(s);
  });
  EXPECT_EQ(n_gemm, 15);  // five GEMMs, each forward, data gradient and weight gradient
  const auto fp8 = kernels::model_shapes(m, 2, 1, 8192, Precision::kFP8);
  EXPECT_TRUE(contains(fp8, GemmShape{8192, 3072, 4096, DType::kFP8}));
}

TEST(KernelSuiteShapes, TpFeasibility) {
  const Model m = test::catalog_model("llama3.1-8b");
  EXPECT_TRUE(kernels::tp_feasible(m, 8));
  EXPECT_FALSE(kernels::tp_feasible(m, 3));   // 32 heads
  EXPECT_FALSE(kernels::tp_feasible(m, 16));  // 8 KV heads
}

// A database measured on the suite's shapes hits every kernel the cost model produces, GEMMs
// included, for every catalog model at TP 1, 2, 4 and 8.
TEST(KernelSuiteShapes, EnumerationMatchesTheCostModel) {
  std::vector<Model> models;
  for (const auto& name :
       {"llama2-7b", "llama2-70b", "llama3-8b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b",
        "mixtral-8x7b", "gpt3-175b", "nemotron4-15b", "nemotron4-340b"}) {
    models.push_back(test::catalog_model(name));
  }
  const kernels::SuiteOptions opt;
  const auto suite = kernels::suite_shapes(models, opt);
  std::set<std::string> keys;
  for (const auto& s : suite) EXPECT_TRUE(keys.insert(exact_key(s)).second) << exact_key(s);
  const Platform pf = test::catalog_platform("a100-sxm-hdr");
  int gemms = 0;
  for (const auto& m : models) {
    for (std::int64_t tp : {1, 2, 4, 8}) {
      ASSERT_TRUE(kernels::tp_feasible(m, tp)) << m.name << " " << tp;
      for (auto precision : {Precision::kBF16, Precision::kFP8}) {
        Plan p;
        p.tp = tp;
        p.seq_len = 4096;
        p.precision = precision;
        const auto cm = compute_costs(m, pf, p, test::uniform_partition(m, 1));
        std::set<std::string> from_cost;
        for (const auto* pass : {&cm.stages[0].forward, &cm.stages[0].backward}) {
          for (const auto& k : pass->kernels) {
            EXPECT_TRUE(keys.count(exact_key(k.shape))) << m.name << " tp " << tp << ": " << k.name;
            if (std::holds_alternative<GemmShape>(k.shape)) from_cost.insert(exact_key(k.shape));
          }
        }
        std::set<std::string> enumerated;
        for (const auto& s : kernels::model_shapes(m, tp, 1, 4096, precision)) {
          if (std::holds_alternative<GemmShape>(s)) enumerated.insert(exact_key(s));
        }
        EXPECT_EQ(enumerated, from_cost) << m.name << " tp " << tp;
        gemms += static_cast<int>(from_cost.size());
      }
    }
  }
  EXPECT_GT(gemms, 1000);
}

TEST(KernelSuiteShapes, Grids) {
  EXPECT_EQ(kernels::pow2_grid(512, 4096), (std::vector<std::int64_t>{512, 1024, 2048, 4096}));
  EXPECT_THROW(kernels::pow2_grid(500, 4096), std::invalid_argument);
  EXPECT_THROW(kernels::pow2_grid(4096, 512), std::invalid_argument);
  kernels::SuiteOptions opt;
  opt.gemm_grid_lo = 1024;
  opt.gemm_grid_hi = 4096;
  const auto shapes = kernels::suite_shapes({}, opt);
  const auto gemm = kernels::filter_ops(shapes, {"gemm"});
  EXPECT_EQ(gemm.size(), 2u * 27u);  // 3 x 3 x 3 in BF16 and in FP8
  EXPECT_TRUE(contains(gemm, GemmShape{1024, 4096, 2048, DType::kFP8}));
  const auto mem = kernels::filter_ops(shapes, {"memory"});
  EXPECT_EQ(mem.size(), memory_ops().size() * 13u);  // 2^16 to 2^28 elements
  EXPECT_TRUE(contains(mem, MemoryShape{"adam", 1, 1 << 20}));
  EXPECT_TRUE(contains(mem, MemoryShape{"rmsnorm", 256, 4096}));
  EXPECT_EQ(kernels::filter_ops(shapes, {"attention"}).size(), 2u * 3u * 6u * 2u);
}

TEST(KernelSuiteDatabase, EntriesAndMerge) {
  const auto e = kernels::measured_entry(GemmShape{1024, 1024, 1024}, {3e-6, 1e-6, 2e-6});
  EXPECT_DOUBLE_EQ(e.median_s, 2e-6);
  EXPECT_DOUBLE_EQ(*e.p10_s, 1.2e-6);
  EXPECT_DOUBLE_EQ(*e.p90_s, 2.8e-6);
  EXPECT_EQ(*e.repetitions, 3);

  KernelDbMeta meta;
  meta.gpu_name = "GPU A";
  meta.date = "d";
  auto other = e;
  other.median_s = 5e-6;
  const KernelDatabase a(KernelDbKind::kMeasured, meta,
                         {e, kernels::measured_entry(MemoryShape{"copy", 1, 1 << 20}, {1e-5})});
  KernelDbMeta meta_b = meta;
  meta_b.copy_GBps = 2800;
  const KernelDatabase b(KernelDbKind::kMeasured, meta_b, {other});
  const auto merged = kernels::merge_databases({a, b});
  ASSERT_EQ(merged.entries().size(), 2u);
  EXPECT_DOUBLE_EQ(merged.lookup(GemmShape{1024, 1024, 1024})->seconds, 5e-6);  // b replaces a
  EXPECT_DOUBLE_EQ(*merged.meta().copy_GBps, 2800);
  KernelDbMeta meta_c = meta;
  meta_c.gpu_name = "GPU C";
  EXPECT_THROW(kernels::merge_databases({a, KernelDatabase(KernelDbKind::kMeasured, meta_c, {})}),
               InputError);
}

}  // namespace
}  // namespace trainsim
