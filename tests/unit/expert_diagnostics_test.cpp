// Expert parallelism's diagnostics: a skewed expert load that dominates a stage, an
// expert-parallel group the rank order spreads over nodes, experts split by expert TP where a
// larger EP holds them whole, and all-to-alls left on the compute stream, each with fixes priced
// on the same GPUs (Mixtral 8x7B on 64 GPUs, results/moe/mixtral-8x7b.txt's plan).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/check/detect.hpp"
#include "sim/cli/scenario.hpp"
#include "sim/core/format.hpp"
#include "sim/cost/layer_ops.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/search/diagnose.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

std::vector<Diagnostic> diagnostics(const std::string& id,
                                    const std::map<std::string, std::string>& extra,
                                    const std::string& model = "mixtral-8x7b") {
  InputRequest req;
  req.model = model;
  req.platform = "h100-sxm-ndr";
  req.plan_flags = {{"pp", "4"},
                    {"vp", "8"},
                    {"schedule", "interleaved"},
                    {"dp", "16"},
                    {"ep", "8"},
                    {"gbs", "256"},
                    {"seq_len", "4096"},
                    {"zero", "1"},
                    {"recompute", "full"},
                    {"overlap_grad_reduce", "true"}};
  for (const auto& [key, value] : extra) req.plan_flags[key] = value;
  const ResolvedInputs in = resolve_inputs(req);
  const Partition part = build_partition(in.model, in.platform, in.plan, in.origin);
  const CostModel costs = compute_costs(in.model, in.platform, in.plan, part);
  std::vector<Diagnostic> found;
  for (auto& d : diagnose(in.model, in.platform, in.plan, part, costs)) {
    if (d.id == id) found.push_back(std::move(d));
  }
  return found;
}

// The busiest of 8 experts at 1.5 times the mean, one expert per GPU: that GPU computes 1.5 times
// the rows (expert_rank_load), and the wait is over 10 % of a stage's passes. Fixes: a capacity
// factor (dropping tokens), half the EP (two experts per GPU: 1.25 times the rows).
TEST(ExpertDiagnostics, ImbalanceThatDominatesAStage) {
  EXPECT_DOUBLE_EQ(expert_rank_load(8, 1, 1.5, 0), 1.5);
  EXPECT_DOUBLE_EQ(expert_rank_load(8, 2, 1.5, 0), (1.5 + 6.5 / 7) / 2);
  const auto found = diagnostics("expert-imbalance", {{"moe_imbalance", "1.5"}});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  EXPECT_EQ(found[0].message.rfind("expert load imbalance: the busiest expert takes 1.50 times "
                                   "the mean tokens, so the GPU holding it (1 of the 8 experts) "
                                   "computes 1.50 times the balanced rows",
                                   0),
            0u)
      << found[0].message;
  EXPECT_EQ(found[0].fix.rfind("--moe-capacity-factor 1.00 (tokens over it dropped) (same GPUs): "
                               "step ",
                               0),
            0u)
      << found[0].fix;
  EXPECT_NE(found[0].fix.find("; or --ep 4 (same GPUs): step "), std::string::npos);
  // Balanced, or skewed a little: nothing to say.
  EXPECT_TRUE(diagnostics("expert-imbalance", {}).empty());
  EXPECT_TRUE(diagnostics("expert-imbalance", {{"moe_imbalance", "1.05"}}).empty());
}

// EP placed outside DP in the rank order spans two nodes although 8 GPUs fit in one; the fix
// moves EP next to TP. In Megatron's order it is on one node, and nothing is said.
TEST(ExpertDiagnostics, AllToAllAcrossNodesWhenANodeWouldDo) {
  const auto found = diagnostics("ep-across-nodes", {{"rank_order", "tp-dp-ep-cp-pp"}});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].message.rfind(
                "the expert-parallel group of 8 GPUs spans 2 nodes (it fits in 1 node): every MoE "
                "layer's token all-to-alls, forward and backward, cross InfiniBand instead of "
                "NVLink (each micro-batch's passes wait ",
                0),
            0u)
      << found[0].message;
  // The wait is the one ep-a2a-exposed reports for the same plan: the all-to-alls on the
  // compute stream.
  const auto exposed = diagnostics("ep-a2a-exposed", {{"rank_order", "tp-dp-ep-cp-pp"}});
  ASSERT_EQ(exposed.size(), 1u);
  const auto wait_of = [](const std::string& m, const std::string& after) {
    const auto at = m.find(after);
    return at == std::string::npos ? std::string() : m.substr(at + after.size(), 16);
  };
  const std::string wait = wait_of(found[0].message, "passes wait ");
  ASSERT_FALSE(wait.empty());
  EXPECT_EQ(wait.substr(0, wait.find(' ')),
            wait_of(exposed[0].message, "forward and backward (").substr(0, wait.find(' ')));
  // Overlapped with the layers' compute the all-to-alls hide there, the step gains nothing from
  // one node and nothing is said (ExpertAllToAllsOutlastingTheirComputeAcrossNodes below).
  EXPECT_TRUE(diagnostics("ep-across-nodes", {{"rank_order", "tp-dp-ep-cp-pp"},
                                              {"overlap_moe_expert_parallel_comm", "true"},
                                              {"recompute", "selective"}})
                  .empty());
  EXPECT_EQ(found[0].fix.rfind("--rank-order tp-ep-dp-cp-pp (same GPUs): step ", 0), 0u)
      << found[0].fix;
  EXPECT_NE(found[0].fix.find("(-"), std::string::npos);  // faster
  EXPECT_TRUE(diagnostics("ep-across-nodes", {}).empty());
  // With expert TP 2 (as TP) the expert layout strides EP by 2: its 8 GPUs span 2 nodes in
  // Megatron's own order, and a smaller expert TP (or EP) is what puts the group on one node.
  const auto etp = diagnostics("ep-across-nodes", {{"tp", "2"}, {"sp", "true"}, {"dp", "8"}});
  ASSERT_EQ(etp.size(), 1u);
  EXPECT_NE(etp[0].fix.find("--etp 1 (same GPUs): step "), std::string::npos) << etp[0].fix;
}

// Expert TP traded for EP keeps ep x etp, so each GPU holds the same share of the experts; the
// larger EP must divide the experts.
TEST(ExpertDiagnostics, ExpertTpTradedForEpKeepsTheExpertShare) {
  Plan p;
  p.tp = 4;
  p.ep = 8;  // etp 0: as TP
  const auto whole = experts_whole_alternatives(p, 128);
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_EQ(std::pair(whole[0].ep, whole[0].etp), std::pair(std::int64_t{16}, std::int64_t{2}));
  EXPECT_EQ(std::pair(whole[1].ep, whole[1].etp), std::pair(std::int64_t{32}, std::int64_t{1}));
  EXPECT_EQ(experts_whole_alternatives(p, 16).size(), 1u);
  EXPECT_TRUE(experts_whole_alternatives(p, 8).empty());
  p.etp = 1;
  EXPECT_TRUE(experts_whole_alternatives(p, 128).empty());
}

// Qwen3-30B-A3B at TP 2 (expert TP 2): its 768-wide experts run as 384-wide GEMMs with their tokens
// gathered over two GPUs; EP 16 at expert TP 1 holds the same expert share whole and is priced
// over 5 % faster. Mixtral's 8 experts at EP 8 leave no larger EP; at EP 2 the whole experts of
// EP 4 gain under 5 % and the warning is withdrawn; at expert TP 1 there is nothing to say.
TEST(ExpertDiagnostics, ExpertsSplitByExpertTpWhereEpHoldsThemWhole) {
  const std::map<std::string, std::string> tp2 = {{"tp", "2"}, {"sp", "true"}, {"dp", "8"}};
  auto qwen = tp2;
  qwen["vp"] = "2";  // 48 layers over 4 x 2 virtual stages
  const auto found = diagnostics("expert-tp-split", qwen, "qwen3-30b-a3b");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  EXPECT_EQ(found[0].message.rfind("expert tensor parallelism 2 splits each of the 128 experts' "
                                   "FFNs (768 wide) into GEMMs 384 wide, and every MoE layer "
                                   "gathers its routed tokens over those 2 GPUs",
                                   0),
            0u)
      << found[0].message;
  EXPECT_EQ(found[0].fix.rfind("--ep 16 --etp 1 (same GPUs): step ", 0), 0u) << found[0].fix;
  const auto gain_at = found[0].fix.find("(-");
  ASSERT_NE(gain_at, std::string::npos) << found[0].fix;
  EXPECT_GT(std::stod(found[0].fix.substr(gain_at + 2)), 5.0) << found[0].fix;
  EXPECT_TRUE(diagnostics("expert-tp-split", tp2).empty());
  auto ep2 = tp2;
  ep2["ep"] = "2";
  EXPECT_TRUE(diagnostics("expert-tp-split", ep2).empty());
  qwen["etp"] = "1";
  EXPECT_TRUE(diagnostics("expert-tp-split", qwen, "qwen3-30b-a3b").empty());
}

// Qwen3-30B-A3B's scenario: EP 16 over two nodes with the all-to-alls overlapped, which still
// outlast each MoE layer's compute; the wait the message names is the passes' stalls, and the
// fix (EP 8 on one node) is priced.
TEST(ExpertDiagnostics, ExpertAllToAllsOutlastingTheirComputeAcrossNodes) {
  InputRequest req;
  req.scenario = test::source_dir() + "/scenarios/qwen3-30b-a3b-16gpu.json";
  const ResolvedInputs in = resolve_inputs(req);
  const Partition part = build_partition(in.model, in.platform, in.plan, in.origin);
  const CostModel costs = compute_costs(in.model, in.platform, in.plan, part);
  const auto all = diagnose(in.model, in.platform, in.plan, part, costs);
  const auto d = std::find_if(all.begin(), all.end(),
                              [](const Diagnostic& x) { return x.id == "ep-across-nodes"; });
  ASSERT_NE(d, all.end());
  const double stalls =
      costs.stages[0].forward.stall(Dim::kEP) + costs.stages[0].backward.stall(Dim::kEP);
  ASSERT_GT(stalls, 0.0);
  EXPECT_NE(d->message.find(" (overlapped with the layers' compute, they outlast it: each "
                            "micro-batch's passes wait " +
                            format_seconds(stalls) + " for them, "),
            std::string::npos)
      << d->message;
  EXPECT_EQ(d->fix.rfind("--ep 8 ", 0), 0u) << d->fix;
}

// Across two nodes the expert all-to-alls take 13 % of a stage's passes on the compute stream;
// overlapping them with another micro-batch's compute is the fix, priced and faster. On NVLink
// (Megatron's order) they take under 10 %, and with the overlap on nothing is exposed.
TEST(ExpertDiagnostics, AllToAllsExposedOnTheComputeStream) {
  const auto found = diagnostics("ep-a2a-exposed", {{"rank_order", "tp-dp-ep-cp-pp"}});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  const std::string& m = found[0].message;
  EXPECT_EQ(m.rfind("the expert-parallel all-to-alls run on the compute stream: every MoE layer "
                    "waits for its tokens to reach their experts and come back, forward and "
                    "backward (",
                    0),
            0u)
      << m;
  const auto at = m.find(" ms per micro-batch, ");
  ASSERT_NE(at, std::string::npos) << m;
  const double share = std::stod(m.substr(at + 21));
  EXPECT_GT(share, 10.0);
  EXPECT_LT(share, 20.0);
  // Megatron-Core refuses the overlap under full recomputation: the fix recomputes selectively.
  EXPECT_EQ(found[0].fix.rfind(
                "--recompute selective --overlap-moe-expert-parallel-comm (same GPUs): step ", 0),
            0u)
      << found[0].fix;
  EXPECT_NE(found[0].fix.find("(-"), std::string::npos);  // faster
  EXPECT_TRUE(diagnostics("ep-a2a-exposed", {}).empty());
  EXPECT_TRUE(diagnostics("ep-a2a-exposed", {{"rank_order", "tp-dp-ep-cp-pp"},
                                             {"overlap_moe_expert_parallel_comm", "true"},
                                             {"recompute", "selective"}})
                  .empty());
}

}  // namespace
}  // namespace trainsim
