// Context parallelism: Megatron-Core's rules, where its groups lie, what a rank computes and
// sends, the ring step's overlap in closed form, and what it saves in memory.
#include <gtest/gtest.h>

#include <string>

#include "sim/collective/group_collectives.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/cost/tp_overlap.hpp"
#include "sim/graph/builder.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/layout.hpp"
#include "sim/platform/kernel_shape.hpp"
#include "tests/support/pass_kernels.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan cp_plan(std::int64_t cp, CpComm comm = CpComm::kP2P) {
  Plan p;
  p.cp = cp;
  p.cp_comm = comm;
  p.dp = 2;
  p.gbs = 2;
  p.seq_len = 16384;
  return p;
}

TEST(ContextParallel, MegatronRulesOneLineEach) {
  const Model m = test::catalog_model("llama3.1-8b");  // 32 heads, 8 KV heads
  Plan p = cp_plan(4);
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  p.seq_len = 8196;
  EXPECT_EQ(test::plan_error(p, m),
            "--seq-len: must be divisible by 2 x cp = 8 with --cp 4 (the sequence is cut in 2 x "
            "cp chunks for causal load balance), got 8196");
  p = cp_plan(4);
  p.tp = 8;
  p.sp = true;
  p.seq_len = 8192 + 32;
  EXPECT_EQ(test::plan_error(p, m),
            "--seq-len: must be divisible by 2 x cp x tp = 64 with --cp 4 (the sequence is cut "
            "in 2 x cp chunks for causal load balance), got 8224");
  p = cp_plan(4, CpComm::kA2A);
  p.tp = 4;
  EXPECT_EQ(test::plan_error(p, m),
            "--cp-comm-type: a2a splits the heads over tp x cp = 16, which must divide the KV "
            "heads (8); use p2p or a smaller --cp");
  p.tp = 2;
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  p = cp_plan(2);
  p.attention_backend = AttentionBackend::kUnfused;
  EXPECT_EQ(test::plan_error(p, m),
            "--attention-backend: context parallelism runs in Transformer Engine's fused "
            "attention; use flash");
  p = cp_plan(2);
  p.gpus = 8;
  EXPECT_EQ(test::plan_error(p, m), "--gpus: is 8 but tp x pp x dp x cp = 1 x 1 x 2 x 2 = 4");
}

// Megatron's order tp-cp-ep-dp-pp at tp 2, cp 2, dp 2, pp 2: a CP group steps over a TP group;
// the gradients are reduced over dp x cp, the four GPUs of a stage with the same TP rank.
TEST(ContextParallel, GroupsInMegatronsRankOrder) {
  Plan p = cp_plan(2);
  p.tp = 2;
  p.pp = 2;
  const Layout layout(p);
  EXPECT_EQ(layout.world_size(), 16);
  EXPECT_EQ(layout.group(Dim::kCP, 0), (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(layout.collective_size(Dim::kDP), 4);
  EXPECT_EQ(layout.collective_group(Dim::kDP, 9), (std::vector<std::int64_t>{9, 11, 13, 15}));
  EXPECT_EQ(layout.groups_in_stage(Dim::kDP, 1),
            (std::vector<std::vector<std::int64_t>>{{8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(p.data_shards(), 4);
  // The task graph reduces gradients on those groups of four.
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto costs = compute_costs(m, pf, p, test::uniform_partition(m, 2));
  const TaskGraph g = build_task_graph(p, costs);
  int dp_groups = 0, cp_groups = 0;
  for (const auto& grp : g.groups) {
    if (grp.kind() == CommKind::kDP) {
      EXPECT_EQ(grp.members.size(), 4u);
      ++dp_groups;
    }
    if (grp.kind() == CommKind::kCP) {
      EXPECT_EQ(grp.members.size(), 2u);
      ++cp_groups;
    }
  }
  EXPECT_EQ(dp_groups, 4);  // two per stage
  EXPECT_EQ(cp_groups, 8);
}

// Each rank computes 1/cp of the causal attention: its own step causal over its s/cp tokens, and
// cp - 1 full blocks, Transformer Engine's, the mean rank's mix: cp/2 of c queries by 2c keys
// (half the heads of a 2c block) and the rest 2c queries by c keys (two blocks of c), c = s/2cp;
// every token-wise kernel runs on s/cp tokens.
TEST(ContextParallel, EachRankComputesItsShareOfTheCausalAttention) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto part = test::uniform_partition(m, 1);
  const auto whole = compute_costs(m, pf, cp_plan(1), part).stages[0];
  const auto split = compute_costs(m, pf, cp_plan(4), part).stages[0];
  const auto& ring = test::pass_kernel(split.forward, "decoder.attention.ring");
  EXPECT_EQ(ring.count, 32 * 2);
  const auto& shape = std::get<AttentionShape>(ring.shape);
  EXPECT_EQ(shape.seq, 16384 / 4);
  EXPECT_EQ(shape.heads, 16);
  EXPECT_EQ(shape.kv_heads, 4);
  EXPECT_FALSE(shape.causal);
  const auto& halves = test::pass_kernel(split.forward, "decoder.attention.ring_halves");
  EXPECT_EQ(halves.count, 32 * 2);
  EXPECT_EQ(std::get<AttentionShape>(halves.shape).seq, 16384 / 8);
  EXPECT_EQ(std::get<AttentionShape>(halves.shape).heads, 32);
  EXPECT_EQ(
      std::get<AttentionShape>(test::pass_kernel(split.forward, "decoder.attention").shape).seq,
      4096);
  EXPECT_NEAR(test::launched_flops(split.forward, "decoder.attention"),
              test::launched_flops(whole.forward, "decoder.attention") / 4, 1e-6);
  EXPECT_NEAR(test::launched_flops(split.backward, "decoder.attention"),
              test::launched_flops(whole.backward, "decoder.attention") / 4, 1e-6);
  const auto& qkv = std::get<GemmShape>(test::pass_kernel(split.forward, "decoder.qkv_proj").shape);
  EXPECT_EQ(qkv.m, 16384 / 4);
  EXPECT_DOUBLE_EQ(split.p2p_bytes, whole.p2p_bytes / 4);
}

// The ring step: K and V of the rank's s/cp tokens go to the next rank cp - 1 times (an
// all-gather's traffic), beside the attention; the pass waits only where a transfer outlasts the
// step before it: g + (cp - 1) max(g, c) - G with g = G / cp and c = C / (cp - 1).
TEST(ContextParallel, RingStepOverlapInClosedForm) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto part = test::uniform_partition(m, 1);
  for (const char* order : {"tp-cp-ep-dp-pp", "tp-dp-ep-cp-pp"}) {
    SCOPED_TRACE(order);
    Plan p = cp_plan(2);
    p.dp = 8;
    p.gbs = 8;
    p.seq_len = 4096;
    p.rank_order = *parse_rank_order(order);
    const auto sc = compute_costs(m, pf, p, part).stages[0];
    const double T = 2048, kv = 8 * 128;  // the rank's tokens; K (and V) width
    const CollectiveLoad fwd =
        collective_load(sc.forward.collectives, CollectiveKind::kAllGather, Dim::kCP);
    for (const auto& c : sc.forward.collectives) EXPECT_EQ(c.alongside, c.dim == Dim::kCP);
    EXPECT_DOUBLE_EQ(fwd.bytes, 32 * 2 * T * 2 * kv * 2);  // 32 layers, gathered over cp 2
    EXPECT_EQ(fwd.count, 32);
    const CollectiveLoad bwd =
        collective_load(sc.backward.collectives, CollectiveKind::kAllGather, Dim::kCP);
    EXPECT_DOUBLE_EQ(bwd.bytes, 2 * fwd.bytes);  // K/V and their gradients
    // Within a node (Megatron's order) or across nodes (cp outermost: GPUs 0 and 8).
    const Topology topo(pf, 16);
    const Members group = order[3] == 'c' ? Members{0, 1} : Members{0, 8};
    const GroupCollectives cp_group(topo, group);
    const double C = cp_group.choose(CollectiveKind::kAllGather, fwd.bytes / 32, 1).seconds;
    const double G = test::pass_kernel(sc.forward, "decoder.attention").time.seconds +
                     test::pass_kernel(sc.forward, "decoder.attention.ring").time.seconds;
    const double per_layer = overlap_stall(OverlapMethod::kRingExchange, G, C, 2);
    EXPECT_DOUBLE_EQ(per_layer, std::max(0.0, G / 2 + C - G));
    EXPECT_NEAR(sc.forward.overlap_stall(), 32 * per_layer, 1e-12);
    if (order[3] == 'c') {
      EXPECT_EQ(per_layer, 0);  // NVLink carries an 8 MiB K/V block well within a step
    } else {
      EXPECT_GT(per_layer, 0);  // one NIC does not
    }
  }
}

// Selective recomputation runs the attention core again before the backward, and with it the
// ring exchange (across nodes here, where it stalls): the forward's K/V traffic once more, its
// stall too; without CP nothing crosses a CP group.
TEST(ContextParallel, RecomputedAttentionExchangesAgain) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  for (const CpComm comm : {CpComm::kP2P, CpComm::kAllGather, CpComm::kA2A}) {
    SCOPED_TRACE(to_string(comm));
    Plan p = cp_plan(2, comm);
    p.dp = 8;
    p.gbs = 8;
    p.seq_len = 4096;
    p.rank_order = *parse_rank_order("tp-dp-ep-cp-pp");
    p.recompute = Recompute::kSelective;
    const auto sc = compute_costs(m, pf, p, test::uniform_partition(m, 1)).stages[0];
    std::vector<CollectiveLoad> fwd, again;
    for (const auto& c : sc.forward.collectives) {
      if (c.dim == Dim::kCP) fwd.push_back(c);
    }
    for (const auto& c : sc.recompute.collectives) {
      if (c.dim == Dim::kCP) again.push_back(c);
    }
    ASSERT_FALSE(fwd.empty());
    ASSERT_EQ(again.size(), fwd.size());
    for (std::size_t i = 0; i < fwd.size(); ++i) {
      EXPECT_EQ(again[i].kind, fwd[i].kind);
      EXPECT_EQ(again[i].count, fwd[i].count);
      EXPECT_DOUBLE_EQ(again[i].bytes, fwd[i].bytes);
      EXPECT_EQ(again[i].alongside, fwd[i].alongside);
    }
    EXPECT_DOUBLE_EQ(sc.recompute.stall(Dim::kCP), sc.forward.stall(Dim::kCP));
    if (comm == CpComm::kP2P) {
      EXPECT_GT(sc.recompute.stall(Dim::kCP), 0);
    }
  }
  Plan whole = cp_plan(1);
  whole.recompute = Recompute::kSelective;
  const auto sc = compute_costs(m, pf, whole, test::uniform_partition(m, 1)).stages[0];
  for (const auto& c : sc.recompute.collectives) EXPECT_NE(c.dim, Dim::kCP);
}

// All-to-all (Ulysses): the whole sequence's attention on 1/cp of the heads, four all-to-alls
// of the rank's Q, K, V and output per pass, on the compute stream.
TEST(ContextParallel, AllToAllTradesTheSequenceSplitForAHeadSplit) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto sc =
      compute_costs(m, pf, cp_plan(4, CpComm::kA2A), test::uniform_partition(m, 1)).stages[0];
  const auto& a =
      std::get<AttentionShape>(test::pass_kernel(sc.forward, "decoder.attention").shape);
  EXPECT_EQ(a.seq, 16384);
  EXPECT_EQ(a.heads, 8);
  EXPECT_EQ(a.kv_heads, 2);
  const CollectiveLoad fwd =
      collective_load(sc.forward.collectives, CollectiveKind::kAllToAll, Dim::kCP);
  for (const auto& c : sc.forward.collectives) EXPECT_FALSE(c.alongside);
  EXPECT_EQ(fwd.count, 32 * 4);
  EXPECT_DOUBLE_EQ(fwd.bytes, 32 * 4096.0 * (2 * 4096 + 2 * 1024) * 2);
}

// Transformer Engine's K/V ring merges each step's partial results element-wise: forward, K and
// V packed into the send buffer (copy), the first step's output rescaled (copy) and cp - 1 later
// outputs added after rescaling (adds, over all the rank's tokens or half of them: 0.75 of them
// on the mean rank); backward, K and V copied again and each step's dQ, dK and dV copied or
// added alike. Llama 3.1 8B at cp 4, sequence 16384: the rank's 4096 tokens, K and V of 8 heads
// of 128 (2048 wide), outputs and dQ 4096 wide. a2a+p2p runs them on its ring of 2 over its half
// of the heads; a2a has no ring to merge; all-gather has copies of its own.
TEST(ContextParallel, RingMergesInClosedForm) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto part = test::uniform_partition(m, 1);
  const auto expect = [](const PassCost& pass, const std::string& name, const std::string& op,
                         std::int64_t rows, std::int64_t cols, std::int64_t count) {
    SCOPED_TRACE(name);
    const KernelCost& k = test::pass_kernel(pass, name);
    EXPECT_EQ(k.shape, KernelShape(MemoryShape{op, rows, cols}));
    EXPECT_EQ(k.count, count);
  };
  const auto p2p = compute_costs(m, pf, cp_plan(4), part).stages[0];
  expect(p2p.forward, "decoder.attention.cp_kv_pack", "copy", 4096, 2048, 32);
  expect(p2p.forward, "decoder.attention.cp_merge_first", "copy", 4096, 4096, 32);
  expect(p2p.forward, "decoder.attention.cp_merge", "add", 3072, 4096, 32 * 3);
  expect(p2p.backward, "decoder.attention.grad.cp_kv_pack", "copy", 4096, 2048, 32);
  expect(p2p.backward, "decoder.attention.grad.cp_merge_first", "copy", 4096, 4096 + 2048, 32);
  expect(p2p.backward, "decoder.attention.grad.cp_merge", "add", 3072, 4096 + 2048, 32 * 3);
  Plan hierarchical = cp_plan(4, CpComm::kA2AP2P);
  hierarchical.cp_a2a_size = 2;
  const auto a2a_p2p = compute_costs(m, pf, hierarchical, part).stages[0];
  expect(a2a_p2p.forward, "decoder.attention.cp_merge", "add", 6144, 2048, 32);
  expect(a2a_p2p.backward, "decoder.attention.grad.cp_merge_first", "copy", 8192, 2048 + 1024, 32);
  const auto a2a = compute_costs(m, pf, cp_plan(4, CpComm::kA2A), part).stages[0];
  for (const auto& k : a2a.forward.kernels) EXPECT_EQ(k.name.find(".cp_"), std::string::npos);
  // All-gather: the gathered K/V (the whole 16384 tokens) reordered, each chunk's output (2048
  // tokens) copied into place; backward, the reorder of K/V and of dK/dV, dK/dV zeroed (half a
  // copy), each chunk's dQ placed, and each chunk's dK/dV added over the keys it saw: 4096 x
  // (4 + 1/2) tokens in two launches.
  const auto gathered = compute_costs(m, pf, cp_plan(4, CpComm::kAllGather), part).stages[0];
  expect(gathered.forward, "decoder.attention.cp_kv_reorder", "copy", 16384, 2048, 32);
  expect(gathered.forward, "decoder.attention.cp_chunk_copy", "copy", 2048, 4096, 32 * 2);
  expect(gathered.backward, "decoder.attention.grad.cp_kv_reorder", "copy", 16384, 2048, 32 * 2);
  expect(gathered.backward, "decoder.attention.grad.cp_kv_zero", "copy", 8192, 2048, 32);
  expect(gathered.backward, "decoder.attention.grad.cp_chunk_copy", "copy", 2048, 4096, 32 * 2);
  expect(gathered.backward, "decoder.attention.grad.cp_kv_add", "add", 9216, 2048, 32 * 2);
}

TEST(ContextParallel, ActivationsShrinkByCp) {
  const Model m = test::catalog_model("llama3.1-70b");
  for (const auto recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    Plan one = cp_plan(1), four = cp_plan(4);
    one.tp = four.tp = 8;
    one.sp = four.sp = true;
    one.recompute = four.recompute = recompute;
    const auto a = layer_activations(m, one), b = layer_activations(m, four);
    EXPECT_NEAR(b.saved, a.saved / 4, 1e-6 * a.saved);
    EXPECT_NEAR(b.recompute, a.recompute / 4, 1e-6 * a.saved);
  }
  // The optimizer state is sharded over dp x cp.
  EXPECT_DOUBLE_EQ(model_state(1000, 1, cp_plan(4).data_shards()).optimizer,
                   model_state(1000, 1, 8).optimizer);
}

}  // namespace
}  // namespace trainsim
