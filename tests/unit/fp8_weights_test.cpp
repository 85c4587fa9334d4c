// The FP8 weights of a step (sim/cost/fp8_weights.hpp): each GEMM weight quantised once, in the
// chunk's first forward of the step, in closed form for Llama 3.1 8B, and only there in the
// task graph.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "sim/cost/stage_cost.hpp"
#include "sim/graph/builder.hpp"
#include "sim/plan/layout.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan fp8_plan(bool fp8_weights) {
  Plan p;
  p.tp = 1;
  p.dp = 1;
  p.gbs = 4;
  p.seq_len = 4096;
  p.precision = Precision::kFP8;
  p.zero = fp8_weights ? 1 : 0;
  p.fp8_param_gather = fp8_weights;
  return p;
}

CostModel costs_of(const Plan& p, std::int64_t pp = 1) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  return compute_costs(m, pf, p, test::uniform_partition(m, pp));
}

// Per layer the weights of qkv (4,096 x 6,144), proj (4,096 x 4,096), fc1 (4,096 x 2 x 14,336)
// and fc2 (14,336 x 4,096): 218,103,808 elements, 32 layers; the LM head stays BF16. BF16 weights
// are cast and transposed (4 bytes an element), FP8 ones transposed (2).
TEST(Fp8Weights, EveryGemmWeightOnceAStep) {
  const double per_layer = 4096.0 * 6144 + 4096.0 * 4096 + 4096.0 * 28672 + 14336.0 * 4096;
  for (const bool fp8_weights : {false, true}) {
    const StageCost sc = costs_of(fp8_plan(fp8_weights)).stages.at(0);
    double elements = 0, bytes = 0, seconds = 0;
    int casts = 0;
    for (const KernelCost& k : sc.first_forward.kernels) {
      if (!k.name.ends_with(".weight_fp8_cast")) continue;
      ++casts;
      const auto& m = std::get<MemoryShape>(k.shape);
      EXPECT_EQ(m.op, fp8_weights ? "fp8_transpose" : "fp8_cast_transpose") << k.name;
      EXPECT_EQ(k.count, 32) << k.name;
      elements += static_cast<double>(m.rows * m.cols * k.count);
      bytes += k.bytes * static_cast<double>(k.count);
      seconds += k.time.seconds * static_cast<double>(k.count);
    }
    EXPECT_EQ(casts, 4);
    EXPECT_DOUBLE_EQ(elements, 32 * per_layer);
    EXPECT_DOUBLE_EQ(bytes, (fp8_weights ? 2 : 4) * 32 * per_layer);
    EXPECT_NEAR(sc.first_forward.seconds, sc.forward.seconds + seconds, 1e-12);
    EXPECT_EQ(sc.first_forward.kernels.size(), sc.forward.kernels.size() + 4);
  }
  Plan bf16 = fp8_plan(false);
  bf16.precision = Precision::kBF16;
  EXPECT_TRUE(costs_of(bf16).stages.at(0).first_forward.kernels.empty());
}

// Four micro-batches over two stages: each stage's first forward of the step carries its casts,
// the other three are the plain forward.
TEST(Fp8Weights, TheFirstForwardOfAStepCastsThem) {
  Plan p = fp8_plan(false);
  p.pp = 2;
  const CostModel costs = costs_of(p, 2);
  const TaskGraph g = build_task_graph(p, costs);
  for (std::size_t r = 0; r < g.ranks.size(); ++r) {
    const StageCost& sc = costs.stages.at(static_cast<std::size_t>(g.ranks[r].stage));
    std::vector<double> forwards;
    for (const Op& op : g.ranks[r].ops) {
      if (op.type == OpType::kCompute && op.compute == ComputeKind::kForward) {
        forwards.push_back(op.seconds);
      }
    }
    ASSERT_EQ(forwards.size(), 4u) << r;
    EXPECT_GT(sc.first_forward.seconds, sc.forward.seconds);
    EXPECT_DOUBLE_EQ(forwards[0], sc.first_forward.seconds - sc.first_forward.overlap_stall());
    for (std::size_t i = 1; i < forwards.size(); ++i) {
      EXPECT_DOUBLE_EQ(forwards[i], sc.forward.seconds - sc.forward.overlap_stall()) << i;
    }
  }
}

}  // namespace
}  // namespace trainsim
