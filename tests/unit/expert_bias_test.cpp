// DeepSeek-V3's auxiliary-loss-free load balancing as Megatron-Core runs it
// (--moe-router-enable-expert-bias): each MoE layer's router keeps two fp32 buffers of one value
// per expert, the bias added to its scores and the tokens it sent to each expert; after every
// step finalize_model_grads all-reduces the counts over the stage's TP x CP x DP ranks
// (_update_router_expert_bias) and moves each bias by a fixed rate. The bias is not a parameter.
#include <gtest/gtest.h>

#include "sim/cost/stage_cost.hpp"
#include "sim/graph/builder.hpp"
#include "sim/memory/memory.hpp"
#include "sim/model/params.hpp"
#include "sim/plan/layout.hpp"
#include "tests/support/after_step_all_reduce.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// DeepSeek-V3 cut to 8 layers (3 dense, then 5 MoE) without its multi-token-prediction module:
// under pp 2, 4 layers a stage, stage 0 holds one MoE layer and stage 1 four.
Model small_deepseek() {
  Model m = test::catalog_model("deepseek-v3");
  m.num_layers = 8;
  m.mtp_layers = 0;
  return m;
}

Plan moe_plan() {
  Plan p;
  p.tp = 2;
  p.sp = true;
  p.dp = 4;
  p.ep = 4;
  p.pp = 2;
  p.gbs = 8;
  p.seq_len = 4096;
  return p;
}

CostModel costs(const Model& m, const Plan& p) {
  return compute_costs(m, test::catalog_platform("h100-sxm-ndr"), p,
                       test::uniform_partition(m, p.pp));
}

TEST(ExpertBias, DeepSeekKeepsABufferGptOssLearnsABias) {
  const Model ds = test::catalog_model("deepseek-v3");
  EXPECT_TRUE(ds.moe.router_expert_bias);
  EXPECT_FALSE(ds.moe.router_bias);
  // The Hugging Face config names it by its routing method ("noaux_tc").
  EXPECT_TRUE(load_model(test::data_path("hf/deepseek-v3/config.json")).moe.router_expert_bias);
  EXPECT_EQ(gating_params(ds), 256 * 7168);
  // GPT-OSS's router has a learned bias, a parameter like its weight.
  const Model oss = test::catalog_model("gpt-oss-120b");
  EXPECT_TRUE(oss.moe.router_bias);
  EXPECT_FALSE(oss.moe.router_expert_bias);
  EXPECT_FALSE(load_model(test::data_path("hf/gpt-oss-120b/config.json")).moe.router_expert_bias);
  EXPECT_EQ(gating_params(oss), 128 * (2880 + 1));
}

// Every expert's count, whatever share of the experts EP leaves a GPU: the router scores them
// all. A multi-token-prediction module's MoE layer counts too.
TEST(ExpertBias, EachStageCountsEveryExpertOfItsMoeLayers) {
  Model m = small_deepseek();
  const CostModel c = costs(m, moe_plan());
  EXPECT_DOUBLE_EQ(c.stages[0].expert_bias_sync_bytes, 1 * 256 * 4.0);
  EXPECT_DOUBLE_EQ(c.stages[1].expert_bias_sync_bytes, 4 * 256 * 4.0);
  Plan ep8 = moe_plan();
  ep8.ep = 8;
  ep8.etp = 1;
  EXPECT_DOUBLE_EQ(costs(m, ep8).stages[1].expert_bias_sync_bytes, 4 * 256 * 4.0);
  m.mtp_layers = 1;
  EXPECT_DOUBLE_EQ(costs(m, moe_plan()).stages[1].expert_bias_sync_bytes, 5 * 256 * 4.0);
  m.moe.router_expert_bias = false;
  for (const StageCost& sc : costs(m, moe_plan()).stages) {
    EXPECT_DOUBLE_EQ(sc.expert_bias_sync_bytes, 0);
  }
}

// After the data-parallel reduction and the TP one, the last call before the optimizer step:
// one all-reduce over the stage's 8 GPUs (tp 2 x dp 4), on the compute stream, of the stage's
// counts.
TEST(ExpertBias, EveryGpuAllReducesItsStagesCountsBeforeTheOptimizer) {
  const Plan p = moe_plan();
  const CostModel c = costs(small_deepseek(), p);
  const TaskGraph g = build_task_graph(p, c);
  const Layout layout(p);
  for (std::int64_t r = 0; r < layout.world_size(); ++r) {
    const auto& prog = g.ranks[static_cast<std::size_t>(r)].ops;
    ASSERT_GE(prog.size(), 3u);
    EXPECT_EQ(prog.back().compute, ComputeKind::kOptimizer);
    const Op& sync = prog[prog.size() - 2];
    ASSERT_EQ(sync.type, OpType::kCollective);
    const Group& group = g.groups[static_cast<std::size_t>(sync.group)];
    EXPECT_EQ(group.dim, Dim::kStage);
    EXPECT_EQ(group.members.size(), 8u);
    EXPECT_EQ(sync.collective, CollectiveKind::kAllReduce);
    EXPECT_EQ(sync.stream, Stream::kCompute);
    EXPECT_EQ(sync.comm, CommKind::kDP);
    const auto stage = static_cast<std::size_t>(layout.coord(r, Dim::kPP));
    EXPECT_DOUBLE_EQ(sync.bytes, c.stages[stage].expert_bias_sync_bytes);
    EXPECT_EQ(g.groups[static_cast<std::size_t>(prog[prog.size() - 3].group)].dim, Dim::kTP);
  }
}

// The two buffers, in the allocated runtime; the model state is the same with or without them.
TEST(ExpertBias, TheRoutersKeepTheBiasesAndTheCounts) {
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  const Plan p = moe_plan();
  auto memory = [&](bool expert_bias) {
    Model m = small_deepseek();
    m.moe.router_expert_bias = expert_bias;
    const Partition part = test::uniform_partition(m, p.pp);
    return compute_memory(m, platform, p, part, compute_costs(m, platform, p, part));
  };
  const MemoryModel with = memory(true), without = memory(false);
  for (std::size_t s = 0; s < 2; ++s) {
    const double moe_layers = s == 0 ? 1 : 4;
    EXPECT_DOUBLE_EQ(with.stages[s].runtime_allocated - without.stages[s].runtime_allocated,
                     2 * moe_layers * 256 * 4.0);
    EXPECT_DOUBLE_EQ(with.stages[s].state.total(), without.stages[s].state.total());
  }
}

// One stage of tp 4 x cp 2 on one node, no latency: the step is the micro-batches' closed form
// and then the ring all-reduce over the stage's 8 GPUs (not the TP group's 4), on either engine
// and either replay.
test::AfterStepAllReduce one_node() {
  Plan p;
  p.tp = 4;
  p.cp = 2;
  return test::AfterStepAllReduce(p, &StageCost::expert_bias_sync_bytes);
}

TEST(ExpertBias, TheStepWaitsForTheAllReduce) {
  const auto t = one_node();
  // A ring of eight moves 2 x 7/8 of the buffer through each GPU's 450 GB/s link.
  EXPECT_NEAR(t.all_reduce(), 2 * 7.0 / 8 * t.kBytes / 450e9, 1e-9);
  const double closed = t.closed_form();
  EXPECT_NEAR(t.step(EngineKind::kAnalytic, Replay::kFull), closed, 1e-9 * closed);
  EXPECT_NEAR(t.step(EngineKind::kAnalytic, Replay::kSymmetric), closed, 1e-9 * closed);
}

TEST(ExpertBias, SimGridReplaysTheSameAllReduce) {
  const auto t = one_node();
  const double closed = t.closed_form();
  EXPECT_NEAR(t.step(EngineKind::kSimGrid, Replay::kFull), closed, 1e-6 * closed);
}

TEST(ExpertBias, SimGridFoldedReplaysTheSameAllReduce) {
  const auto t = one_node();
  const double closed = t.closed_form();
  EXPECT_NEAR(t.step(EngineKind::kSimGrid, Replay::kSymmetric), closed, 1e-6 * closed);
}

}  // namespace
}  // namespace trainsim
