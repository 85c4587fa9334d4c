// FP8 delayed scaling's amax reductions (sim/cost/fp8_amax.hpp): one all-reduce of 4-byte amaxes
// after each forward (3 per FP8 GEMM) and each backward (2 per FP8 GEMM) of a chunk, over every
// rank of its pipeline stage (tp x cp x dp), and none in a BF16 plan.
#include <gtest/gtest.h>

#include "sim/cost/fp8_amax.hpp"
#include "sim/graph/builder.hpp"
#include "sim/plan/layout.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan plan(Precision precision) {
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.dp = 2;
  p.gbs = 8;
  p.seq_len = 2048;
  p.precision = precision;
  return p;
}

CostModel costs(const Plan& p) {
  const Model m = test::catalog_model("llama3.1-8b");
  return compute_costs(m, test::catalog_platform("h100-sxm-ndr"), p, test::uniform_partition(m, 2));
}

CollectiveLoad stage_load(const PassCost& pass) {
  return collective_load(pass.collectives, CollectiveKind::kAllReduce, Dim::kStage);
}

TEST(Fp8Amax, OneReductionPerPassOfEveryFp8Gemm) {
  const CostModel fp8 = costs(plan(Precision::kFP8));
  // Stage 0: 16 decoder layers of 4 GEMMs (QKV, output projection, FC1, FC2); the embedding
  // runs none.
  const StageCost& s0 = fp8.stages[0];
  EXPECT_EQ(fp8_gemm_calls(s0.forward), 16 * 4);
  EXPECT_EQ(stage_load(s0.forward).count, 1);
  EXPECT_DOUBLE_EQ(stage_load(s0.forward).bytes, 16 * 4 * 3 * 4.0);
  EXPECT_DOUBLE_EQ(stage_load(s0.backward).bytes, 16 * 4 * 2 * 4.0);
  EXPECT_DOUBLE_EQ(stage_load(s0.backward_input).bytes, 16 * 4 * 2 * 4.0);
  EXPECT_EQ(stage_load(s0.backward_weight).count, 0);
  EXPECT_EQ(stage_load(s0.recompute).count, 0);
  // Stage 1 adds the LM head, which an FP8 plan keeps in BF16.
  EXPECT_EQ(fp8_gemm_calls(fp8.stages[1].forward), 16 * 4);
  const CostModel bf16 = costs(plan(Precision::kBF16));
  EXPECT_EQ(fp8_gemm_calls(bf16.stages[0].forward), 0);
  EXPECT_EQ(stage_load(bf16.stages[0].forward).count, 0);
}

// The reductions' ops on rank 0: on the stage-wide group (its 4 GPUs: tp 2 x dp 2), on the compute
// stream after each of the 4 micro-batches' forward and backward.
TEST(Fp8Amax, OnTheStageGroupAfterEachPass) {
  const Plan p = plan(Precision::kFP8);
  const TaskGraph g = build_task_graph(p, costs(p));
  const Layout layout(p);
  std::vector<double> bytes;
  for (const Op& op : g.ranks[0].ops) {
    if (op.type != OpType::kCollective || op.group < 0) continue;
    const Group& grp = g.groups[static_cast<std::size_t>(op.group)];
    if (grp.members.size() != 4) continue;  // the DP and TP groups have 2
    EXPECT_EQ(op.stream, Stream::kCompute);
    EXPECT_EQ(op.collective, CollectiveKind::kAllReduce);
    bytes.push_back(op.bytes);
  }
  ASSERT_EQ(bytes.size(), 8u);
  int forwards = 0;
  for (const double b : bytes) forwards += b == 16 * 4 * 3 * 4.0 ? 1 : 0;
  EXPECT_EQ(forwards, 4);
  std::vector<std::int32_t> want;
  for (auto r : layout.collective_group(Dim::kStage, 0))
    want.push_back(static_cast<std::int32_t>(r));
  EXPECT_EQ(want, (std::vector<std::int32_t>{0, 1, 2, 3}));

  // A BF16 plan builds no stage-wide group: its groups are the TP and DP ones alone.
  const Plan b = plan(Precision::kBF16);
  EXPECT_EQ(build_task_graph(b, costs(b)).groups.size(), 8u);
  EXPECT_EQ(g.groups.size(), 8u + 2u);  // and one per stage with FP8
}

}  // namespace
}  // namespace trainsim
