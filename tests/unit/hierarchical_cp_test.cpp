// Hierarchical context parallelism (Transformer Engine's a2a+p2p, Megatron-LM's
// --hierarchical-context-parallel-sizes): its rules, its two levels of groups in Megatron's
// order, what a rank computes and sends on each level, the ring's overlap in closed form, and
// the fixes that reach for it.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sim/collective/group_collectives.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/cost/tp_overlap.hpp"
#include "sim/graph/builder.hpp"
#include "sim/plan/layout.hpp"
#include "sim/plan/plan_variants.hpp"
#include "sim/platform/kernel_shape.hpp"
#include "tests/support/pass_kernels.hpp"
#include "tests/support/support.hpp"
#include "tests/unit/check_support.hpp"

namespace trainsim {
namespace {

// Llama 3.1 8B (32 heads, 8 KV heads of 128) at sequence 16384: cp 8 as an a2a level of `a`
// ranks and rings of 8 / a.
Plan hierarchical(std::int64_t a, std::int64_t cp = 8) {
  Plan p;
  p.cp = cp;
  p.cp_comm = CpComm::kA2AP2P;
  p.cp_a2a_size = a;
  p.dp = 2;
  p.gbs = 2;
  p.seq_len = 16384;
  return p;
}

TEST(HierarchicalCp, MegatronsRulesOneLineEach) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p = hierarchical(4);
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  EXPECT_EQ(p.cp_head_split(), 4);
  EXPECT_EQ(p.cp_ring_size(), 2);
  p.cp_a2a_size = 0;
  EXPECT_EQ(test::plan_error(p, m),
            "--cp-comm-type: a2a+p2p needs the size of its a2a level, --cp-a2a-size A "
            "(Megatron-LM's --hierarchical-context-parallel-sizes A cp/A): a divisor of --cp 8 "
            "between 2 and cp / 2, usually the CP ranks on one node");
  for (const std::int64_t a : {1, 3, 8, 16}) {
    p.cp_a2a_size = a;
    EXPECT_EQ(test::plan_error(p, m),
              "--cp-a2a-size: must divide --cp 8 and lie between 2 and cp / 2, got " +
                  std::to_string(a) +
                  " (an a2a level of 1 is p2p, one of cp is a2a: use that --cp-comm-type)");
  }
  p = hierarchical(4);
  p.cp_comm = CpComm::kP2P;
  EXPECT_EQ(test::plan_error(p, m),
            "--cp-a2a-size: sets the a2a level of hierarchical context parallelism, so it needs "
            "--cp-comm-type a2a+p2p (got p2p)");
  p = hierarchical(4);
  p.tp = 4;
  EXPECT_EQ(test::plan_error(p, m),
            "--cp-a2a-size: a2a+p2p splits the heads over tp x cp_a2a_size = 16, which must "
            "divide the KV heads (8); use a smaller a2a level or p2p");
  p.tp = 2;
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  // Transformer Engine's sliding windows run under a2a and allgather only.
  Plan oss = hierarchical(2, 4);
  EXPECT_EQ(test::plan_error(oss, test::catalog_model("gpt-oss-120b")),
            "--cp-comm-type: Transformer Engine runs sliding-window attention under context "
            "parallelism only with a2a or allgather (got a2a+p2p)");
}

// Megatron-Core's hierarchical groups: the a2a level is consecutive ranks of the CP group, the
// p2p level those one a2a group apart. At tp 2, cp 8 = 4 x 2: the CP group of GPU 0 is the even
// GPUs 0-14, its a2a group 0, 2, 4, 6 and its ring 0, 8.
TEST(HierarchicalCp, LevelsOfTheCpGroupInMegatronsOrder) {
  Plan p = hierarchical(4);
  p.tp = 2;
  p.dp = 4;
  p.num_distributed_optimizer_instances = 2;
  const Layout layout(p);
  EXPECT_EQ(layout.group(Dim::kCP, 0), (std::vector<std::int64_t>{0, 2, 4, 6, 8, 10, 12, 14}));
  EXPECT_EQ(layout.group(Dim::kCPA2A, 0), (std::vector<std::int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(layout.group(Dim::kCPA2A, 9), (std::vector<std::int64_t>{9, 11, 13, 15}));
  EXPECT_EQ(layout.group(Dim::kCPP2P, 0), (std::vector<std::int64_t>{0, 8}));
  EXPECT_EQ(layout.group(Dim::kCPP2P, 3), (std::vector<std::int64_t>{3, 11}));
  EXPECT_EQ(layout.collective_size(Dim::kCPA2A), 4);
  EXPECT_EQ(layout.collective_size(Dim::kCPP2P), 2);
  EXPECT_EQ(layout.collective_size(Dim::kCP), 8);
  // The data-parallel groups keep dp x cp, split into instances as before.
  EXPECT_EQ(layout.collective_size(Dim::kDP), 32);
  EXPECT_EQ(layout.collective_size(Dim::kIntraDP), 16);
  EXPECT_EQ(layout.collective_size(Dim::kInterDP), 2);
  // Other kinds of CP have no levels.
  Plan ring = p;
  ring.cp_comm = CpComm::kP2P;
  ring.cp_a2a_size = 0;
  EXPECT_EQ(Layout(ring).collective_size(Dim::kCPA2A), 1);
  EXPECT_EQ(Layout(ring).collective_size(Dim::kCPP2P), 1);
  // The task graph holds both levels' groups: per TP rank two a2a groups and four rings.
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  p.dp = 2;
  p.num_distributed_optimizer_instances = 1;
  const auto costs = compute_costs(m, pf, p, test::uniform_partition(m, 1));
  const TaskGraph g = build_task_graph(p, costs);
  std::map<std::size_t, int> cp_groups;  // members -> groups
  for (const auto& grp : g.groups) {
    if (grp.kind() == CommKind::kCP) ++cp_groups[grp.members.size()];
  }
  EXPECT_EQ(cp_groups, (std::map<std::size_t, int>{{2, 16}, {4, 8}, {8, 4}}));
}

// cp 8 = a2a 4 x p2p 2: all-to-alls over the a2a level give each GPU 4 x 2,048 tokens on 8 of
// the 32 heads; the ring of 2 cuts the sequence in 4 chunks of c = 4,096: a causal step over its
// 2c tokens and one step of c queries by 2c keys (half the heads). Each GPU does 1/8 of the
// causal attention; the ring carries K and V of 2 x 8,192 tokens on 2 KV heads, beside the
// attention, while the all-to-alls run on the compute stream.
TEST(HierarchicalCp, EachLevelMovesItsShare) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto part = test::uniform_partition(m, 1);
  Plan one = hierarchical(4);
  one.cp = 1;
  one.cp_comm = CpComm::kP2P;
  one.cp_a2a_size = 0;
  const auto whole = compute_costs(m, pf, one, part).stages[0];
  const auto sc = compute_costs(m, pf, hierarchical(4), part).stages[0];
  const auto& own =
      std::get<AttentionShape>(test::pass_kernel(sc.forward, "decoder.attention").shape);
  EXPECT_EQ(own.seq, 8192);
  EXPECT_EQ(own.heads, 8);
  EXPECT_EQ(own.kv_heads, 2);
  EXPECT_TRUE(own.causal);
  const auto& ring = test::pass_kernel(sc.forward, "decoder.attention.ring");
  EXPECT_EQ(ring.count, 32);
  EXPECT_EQ(std::get<AttentionShape>(ring.shape).seq, 8192);
  EXPECT_EQ(std::get<AttentionShape>(ring.shape).heads, 4);
  EXPECT_FALSE(std::get<AttentionShape>(ring.shape).causal);
  for (const auto& k : sc.forward.kernels) EXPECT_NE(k.name, "decoder.attention.ring_halves");
  EXPECT_NEAR(test::launched_flops(sc.forward, "decoder.attention"),
              test::launched_flops(whole.forward, "decoder.attention") / 8, 1e-6);
  EXPECT_NEAR(test::launched_flops(sc.backward, "decoder.attention"),
              test::launched_flops(whole.backward, "decoder.attention") / 8, 1e-6);
  const double T = 2048, q = 4096, kv = 1024, e = 2;
  for (const PassCost* pass : {&sc.forward, &sc.backward}) {
    const CollectiveLoad a2a =
        collective_load(pass->collectives, CollectiveKind::kAllToAll, Dim::kCPA2A);
    EXPECT_EQ(a2a.count, 32 * 4);
    EXPECT_DOUBLE_EQ(a2a.bytes, 32 * T * (2 * q + 2 * kv) * e);
    for (const auto& c : pass->collectives) {
      EXPECT_NE(c.dim, Dim::kCP);
      EXPECT_EQ(c.alongside, c.dim == Dim::kCPP2P);
    }
  }
  const CollectiveLoad fwd =
      collective_load(sc.forward.collectives, CollectiveKind::kAllGather, Dim::kCPP2P);
  EXPECT_EQ(fwd.count, 32);
  EXPECT_DOUBLE_EQ(fwd.bytes, 32 * 2 * (4 * T) * 2 * (kv / 4) * e);
  EXPECT_DOUBLE_EQ(
      collective_load(sc.backward.collectives, CollectiveKind::kAllGather, Dim::kCPP2P).bytes,
      2 * fwd.bytes);
}

// The ring over the network at sequence 4096 (data parallelism inside CP in the rank order: the
// ring is GPUs 0 and 8): the pass waits g + max(g, c) - G per layer for attention time G, g = G / 2
// and the step's transfer c, recorded against the p2p level; selective recomputation of the
// attention core runs both levels' exchanges again.
TEST(HierarchicalCp, RingOverlapInClosedForm) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan p = hierarchical(4);
  p.seq_len = 4096;  // steps of 1,024 queries: shorter than their transfers over one NIC
  p.rank_order = *parse_rank_order("tp-dp-ep-cp-pp");
  p.recompute = Recompute::kSelective;
  const Layout layout(p);
  ASSERT_EQ(layout.group(Dim::kCPP2P, 0), (std::vector<std::int64_t>{0, 8}));
  ASSERT_EQ(layout.group(Dim::kCPA2A, 0), (std::vector<std::int64_t>{0, 2, 4, 6}));
  const auto sc = compute_costs(m, pf, p, test::uniform_partition(m, 1)).stages[0];
  const CollectiveLoad fwd =
      collective_load(sc.forward.collectives, CollectiveKind::kAllGather, Dim::kCPP2P);
  const Topology topo(pf, 16);
  const GroupCollectives ring(topo, Members{0, 8});
  const double C = ring.choose(CollectiveKind::kAllGather, fwd.bytes / 32, 1).seconds;
  const double G = test::pass_kernel(sc.forward, "decoder.attention").time.seconds +
                   test::pass_kernel(sc.forward, "decoder.attention.ring").time.seconds;
  const double per_layer = overlap_stall(OverlapMethod::kRingExchange, G, C, 2);
  EXPECT_DOUBLE_EQ(per_layer, std::max(0.0, G / 2 + C - G));
  EXPECT_GT(per_layer, 0);  // one NIC carries the step's 2 MiB slower than the step computes
  EXPECT_NEAR(sc.forward.stall(Dim::kCPP2P), 32 * per_layer, 1e-12);
  EXPECT_EQ(sc.forward.stall(Dim::kCP), 0);
  EXPECT_EQ(sc.forward.stall(Dim::kCPA2A), 0);
  for (const Dim d : {Dim::kCPA2A, Dim::kCPP2P}) {
    for (const auto kind : {CollectiveKind::kAllToAll, CollectiveKind::kAllGather}) {
      const auto a = collective_load(sc.forward.collectives, kind, d);
      const auto b = collective_load(sc.recompute.collectives, kind, d);
      EXPECT_EQ(b.count, a.count);
      EXPECT_DOUBLE_EQ(b.bytes, a.bytes);
    }
  }
  EXPECT_DOUBLE_EQ(sc.recompute.stall(Dim::kCPP2P), sc.forward.stall(Dim::kCPP2P));
}

// A plan's CP changed by a fix or the search keeps its a2a level where that still splits the new
// CP, and otherwise becomes the kind the level's size leaves.
TEST(HierarchicalCp, ChangedCpKeepsAValidLevel) {
  const Plan p = hierarchical(4);
  const Plan wider = with_cp(p, 16);
  EXPECT_EQ(wider.cp_comm, CpComm::kA2AP2P);
  EXPECT_EQ(wider.cp_a2a_size, 4);
  EXPECT_EQ(wider.cp_ring_size(), 4);
  for (const std::int64_t cp : {4, 2}) {
    const Plan narrower = with_cp(p, cp);
    EXPECT_EQ(narrower.cp_comm, CpComm::kA2A);
    EXPECT_EQ(narrower.cp_a2a_size, 0);
  }
  const Plan odd = with_cp(p, 6);
  EXPECT_EQ(odd.cp_comm, CpComm::kP2P);
  EXPECT_EQ(odd.cp_a2a_size, 0);
  const Plan halved = with_cp_dp(p, 4, 4);
  EXPECT_EQ(halved.dp, 4);
  EXPECT_EQ(halved.cp_comm, CpComm::kA2A);
}

using PlanFlags = std::map<std::string, std::string>;

// Llama 3.1 8B's diagnostics with these plan flags, those of one id.
std::vector<Diagnostic> findings(const PlanFlags& flags, const std::string& id) {
  const Checked checked = check_model("llama3.1-8b", flags);
  std::vector<Diagnostic> found;
  for (const Diagnostic* d : checked.with_id(id)) found.push_back(*d);
  return found;
}

// A ring across nodes that cannot hide its steps: the fixes priced include a2a+p2p with the
// heads split over a2a levels; an a2a+p2p plan whose rings cross the network is diagnosed on
// its p2p level.
TEST(HierarchicalCp, RingFixesReachForAnA2aLevel) {
  const PlanFlags ring = {{"cp", "8"},         {"dp", "4"},   {"zero", "1"},
                          {"seq_len", "8192"}, {"gbs", "16"}, {"rank_order", "tp-dp-ep-cp-pp"}};
  const auto found = findings(ring, "cp-ring-exposed");
  ASSERT_EQ(found.size(), 1u);
  for (const char* a : {"2", "4"}) {
    EXPECT_NE(found[0].fix.find(std::string("--cp-comm-type a2a+p2p --cp-a2a-size ") + a +
                                " (same GPUs): step "),
              std::string::npos)
        << found[0].fix;
  }
  PlanFlags levels = ring;
  levels["cp_comm_type"] = "a2a+p2p";
  levels["cp_a2a_size"] = "2";
  const auto again = findings(levels, "cp-ring-exposed");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].message.rfind("context parallelism of 8 by a2a+p2p (rings of 4) stalls the "
                                   "attention: each GPU's 2,048 tokens per micro-batch make ring "
                                   "steps too short to hide their K/V transfers across 4 nodes, "
                                   "over the network (",
                                   0),
            0u)
      << again[0].message;
  EXPECT_NE(again[0].fix.find("; or --cp-a2a-size 4 (same GPUs): step "), std::string::npos)
      << again[0].fix;
  // Leaving a2a+p2p clears the level, so that the flags given are a valid plan.
  EXPECT_NE(again[0].fix.find("; or --cp-comm-type a2a --cp-a2a-size 0 (same GPUs): step "),
            std::string::npos);
}

// All-to-alls over a group the rank order spreads over two nodes: a2a over the whole CP group
// (GPUs 0, 2, ..., 14), and a2a+p2p's a2a level of two (GPUs 0 and 8, TP 4 x DP 2 filling a
// node). The fixes, priced on the same GPUs, put the group in a node; with the a2a level in a
// node (a2a+p2p at 4 x 2 in the first layout) nothing is found. Where the a2a level of two
// spans the nodes, an all-to-all over two GPUs within a node (cp 2, dp 4) comes first.
TEST(HierarchicalCp, AllToAllsAcrossNodesAreFound) {
  PlanFlags whole = {{"cp", "8"},
                     {"dp", "2"},
                     {"zero", "1"},
                     {"seq_len", "16384"},
                     {"gbs", "16"},
                     {"rank_order", "tp-dp-ep-cp-pp"},
                     {"cp_comm_type", "a2a"}};
  const auto found = findings(whole, "cp-a2a-across-nodes");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].message.rfind(
                "context parallelism's all-to-alls run over the context-parallel group of 8 GPUs "
                "(a2a) spanning 2 nodes: every layer's Q, K, V and output all-to-alls, forward "
                "and backward, cross InfiniBand instead of NVLink (each micro-batch's passes "
                "wait ",
                0),
            0u)
      << found[0].message;
  EXPECT_EQ(found[0].fix.rfind("--rank-order tp-cp-dp-ep-pp (same GPUs): step ", 0), 0u)
      << found[0].fix;
  EXPECT_NE(found[0].fix.find("; or --cp-comm-type a2a+p2p --cp-a2a-size 4 (same GPUs): step "),
            std::string::npos);
  // The plain ring, with its seven steps' merges, is no longer among the four best.
  EXPECT_EQ(found[0].fix.find("--cp-comm-type p2p "), std::string::npos) << found[0].fix;
  PlanFlags level = whole;
  level["cp_comm_type"] = "a2a+p2p";
  level["cp_a2a_size"] = "4";
  EXPECT_TRUE(findings(level, "cp-a2a-across-nodes").empty());
  PlanFlags pair = {{"tp", "4"},
                    {"sp", "true"},
                    {"cp", "4"},
                    {"dp", "2"},
                    {"zero", "1"},
                    {"seq_len", "16384"},
                    {"gbs", "16"},
                    {"rank_order", "tp-dp-ep-cp-pp"},
                    {"cp_comm_type", "a2a+p2p"},
                    {"cp_a2a_size", "2"}};
  const auto split = findings(pair, "cp-a2a-across-nodes");
  ASSERT_EQ(split.size(), 1u);
  EXPECT_EQ(split[0].message.rfind("context parallelism's all-to-alls run over an a2a level of 2 "
                                   "GPUs (a2a+p2p) spanning 2 nodes: ",
                                   0),
            0u)
      << split[0].message;
  // Halving cp to an all-to-all within the node beats putting the pair in a node.
  EXPECT_EQ(
      split[0].fix.rfind("--dp 4 --cp 2 --cp-comm-type a2a --cp-a2a-size 0 (same GPUs): step ", 0),
      0u)
      << split[0].fix;
  EXPECT_NE(split[0].fix.find("; or --rank-order tp-cp-dp-ep-pp (same GPUs): step "),
            std::string::npos);
}

}  // namespace
}  // namespace trainsim
