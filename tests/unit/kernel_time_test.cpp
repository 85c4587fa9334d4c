// The cost model's use of the kernel database: where each kernel's time comes from, the roofline
// off the database, and every kernel's FLOPs and bytes those of its shape.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sim/cost/roofline.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/platform/kernel_db.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan plan_of(std::int64_t tp, std::int64_t seq) {
  Plan p;
  p.tp = tp;
  p.seq_len = seq;
  return p;
}

TEST(KernelTime, SourcePerKernel) {
  Platform pf = test::catalog_platform("a100-sxm-hdr");
  const GemmShape g{4096, 3072, 4096};
  const KernelSpec spec{"qkv", KernelKind::kGemm, shape_flops(g), shape_bytes(g), g};
  EXPECT_EQ(kernel_time(pf, spec).source, TimeSource::kRoofline);
  pf.kernel_db = std::make_shared<const KernelDatabase>(
      KernelDbKind::kMeasured, test::synthetic_db_meta(),
      std::vector<KernelDbEntry>{test::db_entry(g, 1e-4),
                                 test::db_entry(GemmShape{8192, 3072, 4096}, 2e-4)});
  EXPECT_EQ(kernel_time(pf, spec).source, TimeSource::kMeasured);
  EXPECT_DOUBLE_EQ(kernel_time(pf, spec).seconds, 1e-4);
  const GemmShape mid{6144, 3072, 4096};
  const auto t = kernel_time(pf, {"x", KernelKind::kGemm, 0, 0, mid});
  EXPECT_EQ(t.source, TimeSource::kInterpolated);
  EXPECT_NEAR(t.seconds, 1.5e-4, 1e-12);  // same rate at both ends: linear in m
  const GemmShape out{16384, 3072, 4096};
  const KernelSpec far{"x", KernelKind::kGemm, shape_flops(out), shape_bytes(out), out};
  EXPECT_EQ(kernel_time(pf, far).source, TimeSource::kNearest);
  EXPECT_NEAR(kernel_time(pf, far).seconds, 4e-4, 1e-12);  // 8192's rate, twice the FLOPs
  const GemmShape small{2048, 3072, 4096};
  const KernelSpec below{"x", KernelKind::kGemm, shape_flops(small), shape_bytes(small), small};
  EXPECT_EQ(kernel_time(pf, below).source, TimeSource::kRoofline);
  EXPECT_DOUBLE_EQ(
      kernel_time(pf, below).seconds,
      roofline_time(pf, Precision::kBF16, KernelKind::kGemm, below.flops, below.bytes).seconds);
}

// Off the database, a GEMM runs at the roofline of its own operands: the LM head of an FP8 plan
// stays in BF16 and must not be priced at the FP8 peak.
TEST(KernelTime, RooflineAtTheKernelsOwnPrecision) {
  Platform pf = test::catalog_platform("h100-sxm-ndr");
  pf.kernel_db = nullptr;
  GemmShape g{16384, 64000, 6144};
  const KernelSpec bf16{"lm_head", KernelKind::kGemm, shape_flops(g), shape_bytes(g), g};
  g.dtype = DType::kFP8;
  const KernelSpec fp8{"mlp_up", KernelKind::kGemm, shape_flops(g), shape_bytes(g), g};
  const double flops = 2.0 * 16384 * 64000 * 6144;
  EXPECT_NEAR(kernel_time(pf, bf16).seconds, flops / (pf.gpu.peak_bf16_flops * pf.efficiency.gemm),
              1e-12);
  EXPECT_NEAR(kernel_time(pf, fp8).seconds,
              flops / (pf.gpu.peak_fp8_flops * pf.efficiency.gemm_fp8), 1e-12);
  EXPECT_GT(kernel_time(pf, bf16).seconds, 1.5 * kernel_time(pf, fp8).seconds);
}

// Every kernel's FLOPs and bytes are those of its shape, for every catalog model.
TEST(KernelTime, SpecsFollowTheirShapes) {
  for (const auto& name : {"llama3.1-8b", "mixtral-8x7b", "gpt3-175b", "nemotron4-340b"}) {
    const Model m = test::catalog_model(name);
    for (std::int64_t tp : {1, 8}) {
      const auto cm = compute_costs(m, test::catalog_platform("a100-sxm-hdr"), plan_of(tp, 4096),
                                    test::uniform_partition(m, 2));
      for (const auto& s : cm.stages) {
        for (const auto* pass : {&s.forward, &s.backward, &s.optimizer}) {
          for (const auto& k : pass->kernels) {
            EXPECT_EQ(k.flops, shape_flops(k.shape)) << k.name;
            EXPECT_EQ(k.bytes, shape_bytes(k.shape)) << k.name;
            EXPECT_GT(k.bytes, 0) << k.name;
          }
        }
      }
    }
  }
  EXPECT_EQ(find_memory_op("adam")->bytes_per_element, kAdamBytesPerParam);
  EXPECT_EQ(find_memory_op("grad_norm")->bytes_per_element, kGradReduceBytes);
}

}  // namespace
}  // namespace trainsim
