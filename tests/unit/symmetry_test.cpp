// Symmetric simulation: which layouts one GPU per pipeline stage can replay, and the reduced
// task graph it replays.
#include "sim/graph/symmetry.hpp"

#include <gtest/gtest.h>

#include "sim/engine/engine.hpp"
#include "sim/graph/builder.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan plan_of(std::int64_t tp, std::int64_t pp, std::int64_t dp, std::int64_t vp = 1) {
  Plan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.vp = vp;
  if (vp > 1) p.schedule = ScheduleKind::kInterleaved;
  p.gbs = 8 * dp;
  p.seq_len = 4096;
  return p;
}

Symmetry symmetry(const Plan& plan, bool contention, double oversubscription = 1.0,
                  std::int64_t nodes_per_leaf = 4) {
  const Topology topo(test::simple_platform(400, 0.5, 50, 2.0, nodes_per_leaf, oversubscription),
                      plan.world_size());
  return stage_symmetry(plan, topo, contention, {});
}

TEST(Symmetry, NodeAlignedLayoutsAreSymmetric) {
  // TP 8 fills a node; each stage's DP ring runs over whole nodes, PP to the same rail.
  EXPECT_TRUE(symmetry(plan_of(8, 4, 2), true).holds);
  EXPECT_TRUE(symmetry(plan_of(8, 4, 32), true).holds);    // 128 nodes in 8 leaves
  EXPECT_TRUE(symmetry(plan_of(8, 4, 4, 2), true).holds);  // interleaved: the ring wraps
  EXPECT_TRUE(symmetry(plan_of(2, 2, 4), true).holds);     // 8 GPUs per stage: one node each
}

TEST(Symmetry, WhereGpusOfAStageDiffer) {
  // TP 4: two DP members per node. NCCL runs one ring per rail, each GPU sending one ring's
  // bytes over NVLink and one over its NIC: every GPU's links carry the same load.
  EXPECT_TRUE(symmetry(plan_of(4, 4, 4), true).holds);
  // TP 4, DP 3: the DP group of GPUs 0, 4 and 8 has two members on node 0 and one on node 1, so
  // its single ring sends from GPU 0 over NVLink and from GPUs 4 and 8 over the network: their
  // links carry different loads (contention), though every DP group prices the same.
  const Symmetry uneven = symmetry(plan_of(4, 1, 3), true);
  EXPECT_FALSE(uneven.holds);
  EXPECT_EQ(uneven.reason,
            "stage 0's data-parallel ring sends from some GPUs over NVLink and from others over "
            "the network, so their links carry different loads");
  EXPECT_TRUE(symmetry(plan_of(4, 1, 3), false).holds);
  // 6 GPUs per stage: stage 1 straddles nodes 0 and 1, so some of its GPUs reach stage 0 over
  // NVLink and some over a NIC. With contention every GPU is replayed; without, one per class of
  // pipeline chain: offsets 0 and 1 (both stages on node 0) and 2 to 5 (stage 1 on node 1). Each
  // DP group (offsets 0, 2, 4 and 1, 3, 5) holds both classes, each TP group one.
  const Symmetry odd = symmetry(plan_of(2, 2, 3), true);
  EXPECT_FALSE(odd.holds);
  EXPECT_EQ(odd.reason, "stage 0's GPUs reach their pipeline neighbours over different routes");
  const Symmetry chains = symmetry(plan_of(2, 2, 3), false);
  EXPECT_TRUE(chains.holds);
  EXPECT_EQ(chains.chains.rep_offsets, (std::vector<std::int64_t>{0, 2}));
  for (std::int64_t o = 0; o < 6; ++o) EXPECT_EQ(chains.chains.class_of(o), o < 2 ? 0 : 1) << o;
  // Oversubscribed leaves can slow some transfers and not others.
  EXPECT_FALSE(symmetry(plan_of(8, 4, 32), true, 2.0).holds);
  EXPECT_TRUE(symmetry(plan_of(8, 4, 32), false, 2.0).holds);
}

// The embedding group's peers count among a GPU's pipeline routes. TP 4, DP 3, PP 3 on leaves of
// 4 nodes: every GPU reaches its neighbours 12 GPUs on over another rail (through the spine),
// but of the first stage's GPUs, 0-7 reach their last-stage peers (24 on) under one leaf on
// their own rail and 8-11 theirs (32-35, the next leaf) through the spine: two classes of chain.
TEST(Symmetry, EmbeddingPeersJoinThePipelineRoutes) {
  const Plan p = plan_of(4, 3, 3);
  const Topology topo(test::simple_platform(400, 0.5, 50, 2.0, 4), p.world_size());
  const Symmetry untied = stage_symmetry(p, topo, false, {});
  EXPECT_TRUE(untied.holds);
  EXPECT_TRUE(untied.chains.rep_offsets.empty());
  const Symmetry tied = stage_symmetry(p, topo, false, {0, 2});
  EXPECT_TRUE(tied.holds);
  EXPECT_EQ(tied.chains.rep_offsets, (std::vector<std::int64_t>{0, 8}));
  for (std::int64_t o = 0; o < 12; ++o) EXPECT_EQ(tied.chains.class_of(o), o < 8 ? 0 : 1) << o;
  // Each class's replaying GPUs of the first and last stages all-reduce with each other.
  CostModel costs = test::uniform_costs(3, 1e-3, 2e-3);
  costs.stages[0].embedding_sync_bytes = costs.stages[2].embedding_sync_bytes = 1e6;
  // choose_replay reads those stages from the costs.
  EXPECT_EQ(choose_replay(p, costs, topo, false, false).chains.rep_offsets,
            tied.chains.rep_offsets);
  const TaskGraph g = build_task_graph(p, costs, Replay::kSymmetric, tied.chains);
  std::vector<std::pair<Members, std::vector<std::int32_t>>> groups;
  for (const Group& grp : g.groups) {
    if (grp.dim == Dim::kEmbedding) groups.emplace_back(grp.members, grp.ranks);
  }
  const std::vector<std::pair<Members, std::vector<std::int32_t>>> want = {{{0, 24}, {0, 4}},
                                                                           {{8, 32}, {1, 5}}};
  EXPECT_EQ(groups, want);
  // And the replay of the two classes takes the step every GPU's replay does.
  const double full = simulate(build_task_graph(p, costs), topo, EngineKind::kAnalytic).step_time_s;
  EXPECT_NEAR(simulate(g, topo, EngineKind::kAnalytic).step_time_s, full, 1e-12 * full);
}

TEST(Symmetry, ChooseReplay) {
  const Plan plan = plan_of(8, 4, 2);
  const Topology topo(test::simple_platform(400, 0.5, 50, 2.0), plan.world_size());
  const auto symmetric = choose_replay(plan, CostModel{}, topo, true, false);
  EXPECT_EQ(symmetric.replay, Replay::kSymmetric);
  EXPECT_EQ(symmetric.why_full, "");
  const auto asked = choose_replay(plan, CostModel{}, topo, true, true);
  EXPECT_EQ(asked.replay, Replay::kFull);
  EXPECT_EQ(asked.why_full, "--full-simulation");
  const auto one_per_stage = choose_replay(plan_of(1, 4, 1), CostModel{}, topo, true, false);
  EXPECT_EQ(one_per_stage.replay, Replay::kFull);
  EXPECT_EQ(one_per_stage.why_full, "");  // nothing to fold: nothing to explain
  const auto uneven = choose_replay(plan_of(4, 1, 3), CostModel{}, topo, true, false);
  EXPECT_EQ(uneven.replay, Replay::kFull);
  EXPECT_EQ(uneven.why_full, stage_symmetry(plan_of(4, 1, 3), topo, true, {}).reason);
  EXPECT_FALSE(uneven.why_full.empty());
}

// The reduced graph: one program per stage, run by the stage's GPU at tp 0, dp 0; the
// collectives' groups keep all their GPUs, replayed by that one rank; pipeline peers are stages.
TEST(Symmetry, ReducedGraph) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Plan plan = plan_of(8, 2, 4);
  const auto costs =
      compute_costs(m, test::catalog_platform("h100-sxm-ndr"), plan, test::uniform_partition(m, 2));
  const TaskGraph full = build_task_graph(plan, costs);
  const TaskGraph g = build_task_graph(plan, costs, Replay::kSymmetric);
  EXPECT_EQ(full.num_ranks(), 64);
  EXPECT_FALSE(full.symmetric());
  ASSERT_EQ(g.num_ranks(), 2);
  EXPECT_EQ(g.num_gpus(), 64);
  EXPECT_TRUE(g.symmetric());
  EXPECT_EQ(g.gpu_of(0), 0);
  EXPECT_EQ(g.gpu_of(1), 32);  // stage 1 starts at tp 8 x dp 4
  EXPECT_EQ(g.replayed_by[31], 0);
  EXPECT_EQ(g.replayed_by[32], 1);
  ASSERT_EQ(g.groups.size(), 4u);  // per stage: its TP group and its DP group
  EXPECT_EQ(g.groups[0].kind(), CommKind::kTP);
  EXPECT_EQ(g.groups[0].members, (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(g.groups[1].members, (std::vector<std::int32_t>{0, 8, 16, 24}));
  EXPECT_EQ(g.groups[3].ranks, (std::vector<std::int32_t>{1}));
  // The replayed program is GPU 0's own, peers renumbered to stages.
  EXPECT_EQ(g.ranks[0].ops.size(), full.ranks[0].ops.size());
  for (const auto& t : g.ranks[0].transfers) EXPECT_EQ(t.peer, 1);
  EXPECT_NO_THROW(check_task_graph(g));
  auto bad = g;
  bad.replayed_by[5] = 7;
  EXPECT_THROW(check_task_graph(bad), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim
