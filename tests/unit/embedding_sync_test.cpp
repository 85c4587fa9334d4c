// The word embedding's gradient all-reduce between the pipeline stages that hold it
// (Megatron-Core's embedding group, finalize_model_grads): a tied LM head or a
// multi-token-prediction module on another stage than the embedding keeps a copy, whose gradient
// the two stages all-reduce after the data-parallel reduction and before the optimizer step.
#include <gtest/gtest.h>

#include "sim/collective/group_collectives.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/builder.hpp"
#include "sim/plan/layout.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Model tied_model() {
  Model m = test::catalog_model("llama3.1-8b");
  m.tied_embeddings = true;
  return m;
}

Plan plan(std::int64_t pp) {
  Plan p;
  p.tp = 2;
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

// One TP shard of the padded vocabulary (128,256 rows, already a multiple of 128 x 2) x 4,096,
// its gradient in fp32.
constexpr double kShardBytes = 128256.0 / 2 * 4096 * 4;

TEST(EmbeddingSync, TheFirstAndLastStagesOfATiedModelHoldTheCopies) {
  const CostModel c = costs(tied_model(), plan(4));
  EXPECT_DOUBLE_EQ(c.stages[0].embedding_sync_bytes, kShardBytes);
  EXPECT_DOUBLE_EQ(c.stages[1].embedding_sync_bytes, 0);
  EXPECT_DOUBLE_EQ(c.stages[2].embedding_sync_bytes, 0);
  EXPECT_DOUBLE_EQ(c.stages[3].embedding_sync_bytes, kShardBytes);
  EXPECT_EQ(embedding_sync_stages(c, 4), (std::vector<std::int64_t>{0, 3}));

  // BF16 gradients with --grad-reduce-in-bf16: half the bytes.
  Plan bf16 = plan(4);
  bf16.grad_reduce_in_bf16 = true;
  EXPECT_DOUBLE_EQ(costs(tied_model(), bf16).stages[3].embedding_sync_bytes, kShardBytes / 2);
  // Untied, or on one stage (one tensor), nothing to synchronise.
  EXPECT_TRUE(embedding_sync_stages(costs(test::catalog_model("llama3.1-8b"), plan(4)), 4).empty());
  EXPECT_TRUE(embedding_sync_stages(costs(tied_model(), plan(1)), 1).empty());
}

TEST(EmbeddingSync, AMultiTokenPredictionModuleAwayFromTheEmbeddingHoldsACopy) {
  Model m = test::catalog_model("llama3.1-8b");
  m.mtp_layers = 1;
  const CostModel c = costs(m, plan(2));
  EXPECT_DOUBLE_EQ(c.stages[0].embedding_sync_bytes, kShardBytes);
  EXPECT_DOUBLE_EQ(c.stages[1].embedding_sync_bytes, kShardBytes);
  // Tied as well: the module's table is the one synchronised (Megatron-Core's
  // shared_embedding_or_output_weight() on a stage running the module), once.
  const std::int64_t untied_held = c.stages[1].params_per_gpu;
  m.tied_embeddings = true;
  const CostModel tied = costs(m, plan(2));
  EXPECT_DOUBLE_EQ(tied.stages[1].embedding_sync_bytes, kShardBytes);
  // Yet the stage holds two tables, as untied: GPTModel skips the output layer's own weight only
  // on the embedding's stage, so there it is allocated beside the module's table, unused.
  EXPECT_EQ(tied.stages[1].params_per_gpu, untied_held);
}

// The collectives rank r runs on its embedding group.
std::vector<Op> embedding_ops(const TaskGraph& g, std::int64_t r) {
  std::vector<Op> out;
  for (const Op& op : g.ranks[static_cast<std::size_t>(r)].ops) {
    if (op.type == OpType::kCollective &&
        g.groups[static_cast<std::size_t>(op.group)].dim == Dim::kEmbedding) {
      out.push_back(op);
    }
  }
  return out;
}

// Every GPU of the first and last stages (4 each: tp 2 x dp 2) all-reduces its shard with the GPU
// at its place in the other stage, on the compute stream, once the gradients are reduced over
// DP, and the optimizer step follows; the middle stages take no part.
TEST(EmbeddingSync, EachGpuOfTheEndStagesAllReducesWithItsPeer) {
  const Plan p = plan(4);
  const TaskGraph g = build_task_graph(p, costs(tied_model(), p));
  const Layout layout(p);
  std::int64_t groups = 0;
  for (const Group& grp : g.groups) {
    if (grp.dim != Dim::kEmbedding) continue;
    ++groups;
    ASSERT_EQ(grp.members.size(), 2u);
    EXPECT_EQ(grp.members[1], grp.members[0] + 3 * layout.stage_leader(1));
  }
  EXPECT_EQ(groups, 4);
  for (std::int64_t r = 0; r < layout.world_size(); ++r) {
    const auto stage = layout.coord(r, Dim::kPP);
    const auto ops = embedding_ops(g, r);
    if (stage == 1 || stage == 2) {
      EXPECT_TRUE(ops.empty());
      continue;
    }
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].collective, CollectiveKind::kAllReduce);
    EXPECT_EQ(ops[0].stream, Stream::kCompute);
    EXPECT_DOUBLE_EQ(ops[0].bytes, kShardBytes);
    EXPECT_EQ(ops[0].comm, CommKind::kDP);
    const auto& prog = g.ranks[static_cast<std::size_t>(r)].ops;
    EXPECT_EQ(prog.back().compute, ComputeKind::kOptimizer);
    EXPECT_EQ(prog[prog.size() - 2].group, ops[0].group);
  }
  // A symmetric replay: one group, replayed by stage 0's rank and stage 3's.
  const TaskGraph s = build_task_graph(p, costs(tied_model(), p), Replay::kSymmetric);
  std::vector<const Group*> sym;
  for (const Group& grp : s.groups) {
    if (grp.dim == Dim::kEmbedding) sym.push_back(&grp);
  }
  ASSERT_EQ(sym.size(), 1u);
  EXPECT_EQ(sym[0]->members, (std::vector<std::int32_t>{0, 12}));
  EXPECT_EQ(sym[0]->ranks, (std::vector<std::int32_t>{0, 3}));
}

// Uniform stages on two nodes (TP 8 fills each), no DP, no latency: the step is 1F1B's closed form
// and then the all-reduce of the embedding's gradient between the nodes, priced as the group's
// own (the last stage has long finished its backward when the first does), on either engine.
struct TwoNodes {
  Plan p;
  CostModel c = test::uniform_costs(2, 1e-3, 2e-3);
  Topology topo{test::simple_platform(450, 0, 50, 0), 16};  // no latency
  static constexpr double kBytes = 1e9;
  TwoNodes() {
    p.tp = 8;
    p.pp = 2;
    p.gbs = 4;
    p.seq_len = 1;
    c.stages[0].embedding_sync_bytes = kBytes;
    c.stages[1].embedding_sync_bytes = kBytes;
  }
  double closed_form() const {
    const double all_reduce =
        GroupCollectives(topo, Members{0, 8}).choose(CollectiveKind::kAllReduce, kBytes, 1).seconds;
    // A ring of two moves 2 (n - 1) / n = 1 buffer through each GPU's 50 GB/s NIC.
    EXPECT_NEAR(all_reduce, kBytes / 50e9, 1e-12);
    return (4 + 2 - 1) * 3e-3 + kBytes / 50e9;
  }
  double step(EngineKind engine, Replay replay) const {
    return simulate(build_task_graph(p, c, replay), topo, engine).step_time_s;
  }
};

TEST(EmbeddingSync, TheStepWaitsForTheAllReduceAfterTheLastBackward) {
  const TwoNodes t;
  const double closed = t.closed_form();
  EXPECT_NEAR(t.step(EngineKind::kAnalytic, Replay::kFull), closed, 1e-9 * closed);
  EXPECT_NEAR(t.step(EngineKind::kAnalytic, Replay::kSymmetric), closed, 1e-9 * closed);
}

TEST(EmbeddingSync, SimGridReplaysTheSameAllReduce) {
  const TwoNodes t;
  const double closed = t.closed_form();
  EXPECT_NEAR(t.step(EngineKind::kSimGrid, Replay::kFull), closed, 1e-6 * closed);
}

}  // namespace
}  // namespace trainsim
