// Diagnostics on the framework bugs trainsim exists to catch, with their exact numbers.
#include "sim/search/diagnose.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "sim/cli/scenario.hpp"
#include "sim/core/format.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"
#include "tests/support/support.hpp"
#include "tests/unit/check_support.hpp"

namespace trainsim {
namespace {

TEST(Diagnostics, Nanotron108StageWithoutParameters) {
  const auto c = check("seeds/nanotron-108");
  const auto found = c.with_id("stage-without-parameters");
  ASSERT_EQ(found.size(), 1u);
  const Diagnostic& d = *found[0];
  EXPECT_EQ(d.severity, Severity::kError);
  EXPECT_EQ(d.stage, 1);
  EXPECT_TRUE(contains(d.message, "stage 1 holds only cast and loss")) << d.message;
  EXPECT_TRUE(contains(d.message, "the LM head 804,448")) << d.message;
  EXPECT_TRUE(
      contains(d.message, "\"ValueError: Can't use DDP because model in PP=1 has no gradient."))
      << d.message;
  // The fix names trainsim's balanced partition and a plan nanotron can run, each with its time.
  // The balanced partition keeps nanotron's framework (its vocabulary unpadded), and names it:
  // the command as given prices the step the fix states.
  const std::string offer =
      "--partition balanced --framework nanotron (Megatron layout \"Et*2|L\", decoders per stage "
      "[2, 0]): step ";
  ASSERT_EQ(d.fix.rfind(offer, 0), 0u) << d.fix;
  const auto b =
      check("seeds/nanotron-108", {{"partition", "balanced"}, {"framework", "nanotron"}});
  const double step = evaluate(b.in.model, b.in.platform, b.in.plan, b.partition).sim.step_time_s;
  EXPECT_EQ(d.fix.substr(offer.size(), format_seconds(step).size()), format_seconds(step));
  EXPECT_TRUE(contains(d.fix, "keep nanotron's rule with --pp 1 --dp 4")) << d.fix;
  EXPECT_TRUE(contains(d.fix, "step ")) << d.fix;
  // Its odd vocabulary (50,277) splits over no TP but 1, so only a smaller TP removes the
  // padding: the fix prices that.
  const auto padding = c.with_id("uneven-tp-shard");
  ASSERT_EQ(padding.size(), 1u);
  EXPECT_TRUE(contains(padding[0]->fix, "--tp 1 --dp 4 (no padding, same GPUs): step "))
      << padding[0]->fix;
  EXPECT_FALSE(contains(padding[0]->fix, "--vocab-divisible-by")) << padding[0]->fix;
}

TEST(Diagnostics, NanotronTwelveLayers) {
  EXPECT_TRUE(check("seeds/nanotron-12l-pp2").with_id("stage-without-parameters").empty());
  const auto c4 = check("seeds/nanotron-12l-pp4");
  const auto pp4 = c4.with_id("stage-without-parameters");
  ASSERT_EQ(pp4.size(), 1u);
  EXPECT_EQ(pp4[0]->stage, 3);
  const auto c8 = check("seeds/nanotron-12l-pp8");
  const auto pp8 = c8.with_id("stage-without-parameters");
  ASSERT_EQ(pp8.size(), 2u);
  EXPECT_EQ(pp8[0]->stage, 6);
  EXPECT_EQ(pp8[1]->stage, 7);
  // balanced fixes it and says by how much.
  EXPECT_TRUE(contains(pp8[0]->fix, "--partition balanced")) << pp8[0]->fix;
  EXPECT_TRUE(contains(pp8[0]->fix, "% vs ")) << pp8[0]->fix;
}

TEST(Diagnostics, ColossalAi6108VocabularyPadding) {
  const auto c = check("seeds/colossalai-6108");
  const auto found = c.with_id("uneven-tp-shard");
  ASSERT_EQ(found.size(), 1u);
  const Diagnostic& d = *found[0];
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_TRUE(contains(d.message,
                       "ColossalAI's rule pads it to a multiple of 64 x 8 = 512, i.e. "
                       "128,512 rows, 16,064 per rank"))
      << d.message;
  EXPECT_TRUE(contains(d.message, "16064 x 8 = 128512 != 128256")) << d.message;
  EXPECT_TRUE(contains(d.message, "[16064, 8192]")) << d.message;
  // A smaller vocabulary multiple removes the padding and prices it alone; a smaller TP, which
  // would move the step for reasons of its own, is then not offered.
  EXPECT_TRUE(contains(d.fix,
                       "--vocab-divisible-by 32 (128,256 = 8 x 16,032, no padding, same "
                       "GPUs): step "))
      << d.fix;
  EXPECT_FALSE(contains(d.fix, "--tp 4")) << d.fix;
  EXPECT_TRUE(contains(d.fix,
                       "or keep the padding and strip the 256 rows when saving (save "
                       "[128256, 8192])"))
      << d.fix;
  EXPECT_EQ(c.in.plan.vocab_multiple(), 64);

  // Megatron's default rule at tp 8 pads to 129024; ColossalAI's at tp 4 pads nothing.
  const auto megatron = check("seeds/colossalai-6108", {{"framework", "megatron"}});
  ASSERT_EQ(megatron.with_id("uneven-tp-shard").size(), 1u);
  EXPECT_TRUE(contains(megatron.with_id("uneven-tp-shard")[0]->message, "129,024 rows"));
  EXPECT_TRUE(check("seeds/colossalai-6108", {{"tp", "4"}, {"dp", "4"}})
                  .with_id("uneven-tp-shard")
                  .empty());
  // At tp 1 nothing splits unevenly: the multiple alone pads the one shard, and says so.
  const auto one =
      check("seeds/colossalai-6108", {{"tp", "1"}, {"dp", "16"}, {"vocab_divisible_by", "1000"}});
  ASSERT_EQ(one.with_id("uneven-tp-shard").size(), 1u);
  const std::string& at_tp1 = one.with_id("uneven-tp-shard")[0]->message;
  EXPECT_TRUE(contains(at_tp1,
                       "the vocabulary (128,256) is not a multiple of 1000: ColossalAI's rule "
                       "pads it to 129,000 rows. The 744 padding rows cost"))
      << at_tp1;
  EXPECT_TRUE(contains(at_tp1, "as [129000, 8192] instead of [128256, 8192]")) << at_tp1;
  EXPECT_FALSE(contains(at_tp1, "tp 1")) << at_tp1;
}

TEST(Diagnostics, DeepSpeed5078EmptyLastStages) {
  const auto c = check("seeds/deepspeed-5078");
  const auto empty = c.with_id("empty-stage");
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0]->stage, 14);
  EXPECT_EQ(empty[0]->severity, Severity::kError);
  EXPECT_TRUE(contains(empty[0]->message, "optimizer got an empty parameter list"))
      << empty[0]->message;
  const auto bare = c.with_id("stage-without-parameters");
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_EQ(bare[0]->stage, 15);
  EXPECT_TRUE(contains(bare[0]->fix, "--partition balanced")) << bare[0]->fix;
}

TEST(Diagnostics, LayersDropped) {
  const auto c = check("seeds/deepspeed-5078", {{"partition", "uniform"}});
  const auto found = c.with_id("layers-dropped");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(contains(found[0]->message, "builds 32 and silently drops the last 10"))
      << found[0]->message;
  // Megatron's own uneven ends are offered beside the balanced partition: Llama 3.1 8B over pp 6
  // builds 30 of its 32 layers; 6 on each of the four middle stages leaves 8 for the ends, and
  // of their splits the fastest puts 2 beside the LM head.
  const auto eight = check_model(
      "llama3.1-8b", {{"tp", "1"}, {"pp", "6"}, {"dp", "1"}, {"seq_len", "8192"}, {"gbs", "8"}});
  ASSERT_EQ(eight.with_id("layers-dropped").size(), 1u);
  EXPECT_TRUE(contains(eight.with_id("layers-dropped")[0]->fix,
                       "; or --decoder-first-pipeline-num-layers 6 "
                       "--decoder-last-pipeline-num-layers 2 (Megatron-LM's uneven ends, decoders "
                       "per stage [6, 6, 6, 6, 6, 2]): step "))
      << eight.with_id("layers-dropped")[0]->fix;
  const auto layout = check("seeds/nanotron-12l-pp2", {{"partition", "Et*5|t*5L"}});
  ASSERT_EQ(layout.with_id("layers-dropped").size(), 1u);
  EXPECT_TRUE(contains(layout.with_id("layers-dropped")[0]->message,
                       "\"Number of decoder layers 10 must match num_layers 12\""));
}

TEST(Diagnostics, StageImbalanceCostsSecondsAndPercent) {
  const auto c = check("llama3.1-70b-64gpu", {{"partition", "Et*10|t*30|t*20|t*20L"}});
  const auto found = c.with_id("stage-imbalance");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0]->stage, 1);
  EXPECT_TRUE(contains(found[0]->message, "above the mean stage")) << found[0]->message;
  EXPECT_TRUE(contains(found[0]->message, " %) of the ")) << found[0]->message;
  EXPECT_TRUE(contains(found[0]->fix, "--partition balanced (Megatron layout \"Et*"))
      << found[0]->fix;
  // The default, even partition is not flagged.
  EXPECT_TRUE(check("llama3.1-70b-64gpu").with_id("stage-imbalance").empty());
}

// On Megatron's uniform rule the stage-imbalance fix also offers Megatron's own uneven ends, the
// fastest split that beats the plan: Llama 3.1 8B over pp 4, the LM head's stage the slowest,
// puts fewer layers beside it. Its step is the plan's with those flags, simulated.
TEST(Diagnostics, StageImbalanceOffersMegatronsUnevenEnds) {
  const std::map<std::string, std::string> flags = {
      {"tp", "1"}, {"pp", "4"}, {"dp", "2"}, {"seq_len", "8192"}, {"gbs", "64"}, {"zero", "1"}};
  const auto c = check_model("llama3.1-8b", flags);
  const auto found = c.with_id("stage-imbalance");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0]->stage, 3);
  const std::string offer =
      "; or --decoder-first-pipeline-num-layers 9 --decoder-last-pipeline-num-layers 5 "
      "(Megatron-LM's uneven ends, decoders per stage [9, 9, 9, 5]): step ";
  const auto at = found[0]->fix.find(offer);
  ASSERT_NE(at, std::string::npos) << found[0]->fix;
  auto uneven = flags;
  uneven.insert(
      {{"decoder_first_pipeline_num_layers", "9"}, {"decoder_last_pipeline_num_layers", "5"}});
  const auto u = check_model("llama3.1-8b", uneven);
  const double step = evaluate(u.in.model, u.in.platform, u.in.plan, u.partition).sim.step_time_s;
  EXPECT_EQ(found[0]->fix.substr(at + offer.size(), format_seconds(step).size()),
            format_seconds(step));
  EXPECT_TRUE(u.with_id("stage-imbalance").empty());
}

// Megatron-LM's uneven first and last stages are options of its uniform rule, refused beside
// --partition balanced: a fix on the balanced partition drops them, and the command it gives
// runs. Llama 3.1 8B's 32 layers as 16 + 16 over pp 4 leave both middle stages empty.
TEST(Diagnostics, BalancedFixDropsMegatronsUnevenStages) {
  const std::map<std::string, std::string> flags = {
      {"tp", "1"}, {"pp", "4"}, {"dp", "2"}, {"seq_len", "4096"}, {"gbs", "64"}};
  auto uneven = flags;
  uneven.insert(
      {{"decoder_first_pipeline_num_layers", "16"}, {"decoder_last_pipeline_num_layers", "16"}});
  const auto c = check_model("llama3.1-8b", uneven);
  const auto empty = c.with_id("empty-stage");
  ASSERT_EQ(empty.size(), 2u);  // stages 1 and 2
  EXPECT_EQ(empty[0]->stage, 1);
  const std::string offer =
      "--partition balanced without --decoder-first-pipeline-num-layers and "
      "--decoder-last-pipeline-num-layers (Megatron layout \"Et*8|t*9|t*9|t*6L\", decoders per "
      "stage [8, 9, 9, 6]): step ";
  ASSERT_EQ(empty[0]->fix.rfind(offer, 0), 0u) << empty[0]->fix;
  auto balanced = flags;
  balanced.insert({"partition", "balanced"});
  const auto b = check_model("llama3.1-8b", balanced);
  EXPECT_TRUE(b.with_id("empty-stage").empty());
  const double step = evaluate(b.in.model, b.in.platform, b.in.plan, b.partition).sim.step_time_s;
  EXPECT_EQ(empty[0]->fix.substr(offer.size(), format_seconds(step).size()), format_seconds(step));
  // The memory fixes searched on the balanced partition drop them too.
  const auto oom = c.with_id("oom");
  ASSERT_EQ(oom.size(), 1u);
  EXPECT_TRUE(contains(oom[0]->fix,
                       "--partition balanced --zero 1 without --decoder-first-pipeline-num-layers "
                       "and --decoder-last-pipeline-num-layers (peak "))
      << oom[0]->fix;
}

TEST(Diagnostics, BatchRules) {
  const auto c = check("llama3.1-70b-64gpu", {{"gbs", "130"}});
  const auto gbs = c.with_id("gbs-not-divisible");
  ASSERT_EQ(gbs.size(), 1u);
  EXPECT_EQ(gbs[0]->severity, Severity::kError);
  EXPECT_TRUE(
      contains(gbs[0]->message, "Simulated here with 32 micro-batches (128 sequences per step)"))
      << gbs[0]->message;
  EXPECT_TRUE(contains(gbs[0]->fix, "--gbs 128: step ")) << gbs[0]->fix;
  EXPECT_TRUE(contains(gbs[0]->fix, "or --gbs 132: step ")) << gbs[0]->fix;
  const auto small = check("llama3.1-70b-64gpu", {{"gbs", "8"}});
  const auto few = small.with_id("microbatches-fewer-than-stages");
  ASSERT_EQ(few.size(), 1u);
  EXPECT_TRUE(contains(few[0]->message, "(p-1)/(m+p-1) = 60.0 %")) << few[0]->message;
  EXPECT_TRUE(contains(few[0]->fix, "--gbs 16 (m = p)")) << few[0]->fix;
}

// Where a TP group lies is the rank order's doing: Llama 2 7B at tp 16 spans two nodes of 8 in
// Megatron's order (and in any order with TP innermost), and at tp 4 a dp-first order (dp 8)
// puts each GPU of a TP group on another node. The fix moves TP within a node, and innermost
// where the order would still spread it.
TEST(Diagnostics, TpAcrossNodesFollowsTheRankOrder) {
  auto tp_span = [](const std::string& order, const std::string& tp, const std::string& dp) {
    InputRequest req;
    req.model = "llama2-7b";
    req.platform = "h100-sxm-ndr";
    req.plan_flags = {{"tp", tp},          {"pp", "2"},   {"dp", dp},
                      {"seq_len", "4096"}, {"gbs", "64"}, {"rank_order", order}};
    const ResolvedInputs in = resolve_inputs(req);
    const Partition part = build_partition(in.model, in.platform, in.plan, in.origin);
    const CostModel costs = compute_costs(in.model, in.platform, in.plan, part);
    std::vector<Diagnostic> found;
    for (auto& d : diagnose(in.model, in.platform, in.plan, part, costs)) {
      if (d.id == "tp-across-nodes") found.push_back(std::move(d));
    }
    return found;
  };
  const std::string wide =
      "tensor parallelism of 16 spans nodes of 8 GPUs: its all-reduces leave NVLink for the "
      "network";
  for (const std::string order : {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"}) {
    const auto found = tp_span(order, "16", "2");
    ASSERT_EQ(found.size(), 1u) << order;
    EXPECT_EQ(found[0].severity, Severity::kWarning);
    EXPECT_EQ(found[0].message, wide);
    EXPECT_EQ(found[0].fix.rfind("--tp 8 --dp 4 (same GPUs): step ", 0), 0u) << found[0].fix;
  }
  EXPECT_TRUE(tp_span("tp-cp-ep-dp-pp", "4", "8").empty());
  const auto spread = tp_span("dp-tp-cp-ep-pp", "4", "8");
  ASSERT_EQ(spread.size(), 1u);
  EXPECT_EQ(spread[0].message,
            "tensor parallelism of 4 spans 4 nodes of 8 GPUs: rank order dp-tp-cp-ep-pp numbers a "
            "TP group's GPUs 8 apart (one per node), so its all-reduces leave NVLink for the "
            "network");
  EXPECT_EQ(spread[0].fix.rfind("--rank-order tp-dp-cp-ep-pp (same GPUs): step ", 0), 0u)
      << spread[0].fix;
  const auto both = tp_span("dp-tp-cp-ep-pp", "16", "2");
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].fix.rfind("--tp 8 --dp 4 --rank-order tp-dp-cp-ep-pp (same GPUs): step ", 0),
            0u)
      << both[0].fix;
}

// A context-parallel ring over the network with short chunks: Llama 3.1 8B at sequence 8192
// over cp 8, the CP group one GPU on each of four nodes (cp outermost) and two per node. Each
// GPU's 1,024 tokens give ring steps too short to hide their K/V transfers; the fixes keep the
// GPUs and are priced, the fastest first. In Megatron's order (CP on NVLink) the ring hides.
TEST(Diagnostics, CpRingTooShortToHideItsTransfers) {
  auto cp_ring = [](const std::string& order) {
    InputRequest req;
    req.model = "llama3.1-8b";
    req.platform = "h100-sxm-ndr";
    req.plan_flags = {{"cp", "8"},         {"dp", "4"},   {"zero", "1"},
                      {"seq_len", "8192"}, {"gbs", "16"}, {"rank_order", order}};
    const ResolvedInputs in = resolve_inputs(req);
    const Partition part = build_partition(in.model, in.platform, in.plan, in.origin);
    const CostModel costs = compute_costs(in.model, in.platform, in.plan, part);
    std::vector<Diagnostic> found;
    for (auto& d : diagnose(in.model, in.platform, in.plan, part, costs)) {
      if (d.id == "cp-ring-exposed") found.push_back(std::move(d));
    }
    return found;
  };
  const auto found = cp_ring("tp-dp-ep-cp-pp");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  EXPECT_EQ(found[0].message.rfind("context parallelism of 8 by ring (p2p) stalls the attention: "
                                   "each GPU's 1,024 tokens per micro-batch make ring steps too "
                                   "short to hide their K/V transfers across 4 nodes, over the "
                                   "network (",
                                   0),
            0u)
      << found[0].message;
  EXPECT_EQ(found[0].fix.rfind("--rank-order tp-cp-dp-ep-pp (same GPUs): step ", 0), 0u)
      << found[0].fix;
  EXPECT_NE(found[0].fix.find("; or --dp 8 --cp 4 (same GPUs): step "), std::string::npos);
  EXPECT_NE(found[0].fix.find("; or --cp-comm-type a2a (same GPUs): step "), std::string::npos);
  EXPECT_TRUE(cp_ring("tp-cp-ep-dp-pp").empty());
}

// A baseline the caller has simulated already (the run's own step) is what every fix compares
// with; nothing re-simulates the plan.
TEST(Diagnostics, FixesCompareWithTheGivenBaseline) {
  const auto c = check("llama3.1-70b-64gpu", {{"partition", "Et*10|t*30|t*20|t*20L"}});
  const auto costs = compute_costs(c.in.model, c.in.platform, c.in.plan, c.partition);
  const double step = evaluate(c.in.model, c.in.platform, c.in.plan, c.partition).sim.step_time_s;
  const auto given = diagnose(c.in.model, c.in.platform, c.in.plan, c.partition, costs, {}, step);
  ASSERT_EQ(given.size(), c.diagnostics.size());
  for (std::size_t i = 0; i < given.size(); ++i) {
    EXPECT_EQ(given[i].message, c.diagnostics[i].message);
    EXPECT_EQ(given[i].fix, c.diagnostics[i].fix);
  }
  const auto doubled =
      diagnose(c.in.model, c.in.platform, c.in.plan, c.partition, costs, {}, 2 * step);
  const auto imbalance = std::find_if(doubled.begin(), doubled.end(), [](const Diagnostic& d) {
    return d.id == "stage-imbalance";
  });
  ASSERT_NE(imbalance, doubled.end());
  EXPECT_TRUE(contains(imbalance->fix, " vs " + format_seconds(2 * step) + " now)"))
      << imbalance->fix;
}

}  // namespace
}  // namespace trainsim
