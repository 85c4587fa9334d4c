// The TP all-reduce of the gradients TP ranks compute apart (Megatron-Core's
// finalize_model_grads, _allreduce_non_tensor_model_parallel_grads): parameters every TP rank
// holds whole (norms, row-parallel biases, the router, MLA's duplicated down-projections) see
// only the rank's own tokens under sequence parallelism, and q/k norms only the rank's own heads,
// so each TP group all-reduces their gradients after the data-parallel reduction and before the
// optimizer step.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/cost/rank_params.hpp"
#include "sim/graph/builder.hpp"
#include "sim/plan/layout.hpp"
#include "tests/support/after_step_all_reduce.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan plan(std::int64_t tp, bool sp, std::int64_t pp = 1) {
  Plan p;
  p.tp = tp;
  p.sp = sp;
  p.pp = pp;
  p.dp = 2;
  p.gbs = 8;
  p.seq_len = 2048;
  return p;
}

CostModel costs(const Model& m, const Plan& p) {
  return compute_costs(m, test::catalog_platform("h100-sxm-ndr"), p,
                       test::uniform_partition(m, p.pp));
}

TEST(TpGradSync, SequenceParallelismSyncsEveryReplicatedParameter) {
  // Llama 3.1 8B: RMSNorm, no biases; the two norms of 4,096 a layer.
  const Model llama = test::catalog_model("llama3.1-8b");
  EXPECT_EQ(tp_partial_grads_per_layer(llama, plan(2, true)), 2 * 4096);
  EXPECT_EQ(tp_partial_grads_per_layer(llama, plan(2, false)), 0);
  EXPECT_EQ(tp_partial_grads_per_layer(llama, plan(1, false)), 0);

  // Qwen3-30B-A3B: q/k norms of the head dimension (128), synced with TP alone; under SP also
  // the two norms of 2,048 and the router of 128 experts x 2,048.
  const Model qwen = test::catalog_model("qwen3-30b-a3b");
  EXPECT_EQ(tp_partial_grads_per_layer(qwen, plan(2, false)), 2 * 128);
  EXPECT_EQ(tp_partial_grads_per_layer(qwen, plan(2, true)), 2 * 128 + 2 * 2048 + 128 * 2048);

  // DeepSeek-V3: MLA's duplicated down-projections (7,168 x (512 + 64) and 7,168 x 1,536) with
  // their norms, the two layer norms, and in an MoE layer the router (256 x 7,168; its expert
  // bias is a buffer without a gradient).
  const Model ds = test::catalog_model("deepseek-v3");
  const std::int64_t mla = 7168 * (512 + 64) + 512 + 7168 * 1536 + 1536;
  EXPECT_EQ(tp_partial_grads_per_layer(ds, plan(2, true), false), mla + 2 * 7168);
  EXPECT_EQ(tp_partial_grads_per_layer(ds, plan(2, true), true), mla + 2 * 7168 + 256 * 7168);
}

TEST(TpGradSync, EachStageSyncsItsLayersAndTheLastItsFinalNorm) {
  // 32 layers on two stages of 16; fp32 gradients, BF16 with --grad-reduce-in-bf16.
  const Model llama = test::catalog_model("llama3.1-8b");
  const CostModel c = costs(llama, plan(2, true, 2));
  EXPECT_DOUBLE_EQ(c.stages[0].tp_sync_bytes, 16.0 * 2 * 4096 * 4);
  EXPECT_DOUBLE_EQ(c.stages[1].tp_sync_bytes, (16.0 * 2 * 4096 + 4096) * 4);
  Plan bf16 = plan(2, true, 2);
  bf16.grad_reduce_in_bf16 = true;
  EXPECT_DOUBLE_EQ(costs(llama, bf16).stages[1].tp_sync_bytes, (16.0 * 2 * 4096 + 4096) * 2);
  EXPECT_DOUBLE_EQ(costs(llama, plan(2, false, 2)).stages[1].tp_sync_bytes, 0);
}

// Every GPU all-reduces once over its own TP group, on the compute stream, after its
// data-parallel reduction and before the optimizer step.
TEST(TpGradSync, EachGpuAllReducesOverItsTpGroupBeforeTheOptimizer) {
  const Plan p = plan(2, true, 2);
  const CostModel c = costs(test::catalog_model("llama3.1-8b"), p);
  const TaskGraph g = build_task_graph(p, c);
  const Layout layout(p);
  for (std::int64_t r = 0; r < layout.world_size(); ++r) {
    const auto& prog = g.ranks[static_cast<std::size_t>(r)].ops;
    ASSERT_GE(prog.size(), 2u);
    const Op& sync = prog[prog.size() - 2];
    ASSERT_EQ(sync.type, OpType::kCollective);
    const Group& group = g.groups[static_cast<std::size_t>(sync.group)];
    EXPECT_EQ(group.dim, Dim::kTP);
    EXPECT_EQ(group.members.size(), 2u);
    EXPECT_EQ(sync.collective, CollectiveKind::kAllReduce);
    EXPECT_EQ(sync.stream, Stream::kCompute);
    EXPECT_EQ(sync.comm, CommKind::kTP);
    const auto stage = static_cast<std::size_t>(layout.coord(r, Dim::kPP));
    EXPECT_DOUBLE_EQ(sync.bytes, c.stages[stage].tp_sync_bytes);
    EXPECT_EQ(prog.back().compute, ComputeKind::kOptimizer);
    // The data-parallel reduction comes before it on the compute stream.
    const auto dp = std::find_if(prog.begin(), prog.end(), [](const Op& op) {
      return op.type == OpType::kCollective && op.comm == CommKind::kDP;
    });
    ASSERT_NE(dp, prog.end());
    EXPECT_EQ(dp->stream, Stream::kCompute);
    EXPECT_LT(dp - prog.begin(), static_cast<std::ptrdiff_t>(prog.size()) - 2);
  }
}

// One stage of TP 8 on one node, no DP, no latency: the step is the micro-batches' closed form and
// then the ring all-reduce over NVLink, on either engine and either replay.
test::AfterStepAllReduce one_node() {
  Plan p;
  p.tp = 8;
  p.sp = true;
  return test::AfterStepAllReduce(p, &StageCost::tp_sync_bytes);
}

TEST(TpGradSync, TheStepWaitsForTheAllReduce) {
  const auto t = one_node();
  // A ring of eight moves 2 x 7/8 of the buffer through each GPU's 450 GB/s link.
  EXPECT_NEAR(t.all_reduce(), 2 * 7.0 / 8 * t.kBytes / 450e9, 1e-9);
  const double closed = t.closed_form();
  EXPECT_NEAR(t.step(EngineKind::kAnalytic, Replay::kFull), closed, 1e-9 * closed);
  EXPECT_NEAR(t.step(EngineKind::kAnalytic, Replay::kSymmetric), closed, 1e-9 * closed);
}

TEST(TpGradSync, SimGridReplaysTheSameAllReduce) {
  const auto t = one_node();
  const double closed = t.closed_form();
  EXPECT_NEAR(t.step(EngineKind::kSimGrid, Replay::kFull), closed, 1e-6 * closed);
}

// Folded: one rank replays the TP group for its eight members.
TEST(TpGradSync, SimGridFoldedReplaysTheSameAllReduce) {
  const auto t = one_node();
  const double closed = t.closed_form();
  EXPECT_NEAR(t.step(EngineKind::kSimGrid, Replay::kSymmetric), closed, 1e-6 * closed);
}

}  // namespace
}  // namespace trainsim
