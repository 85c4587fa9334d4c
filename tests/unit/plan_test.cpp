#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/plan/layout.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/plan_variants.hpp"
#include "sim/plan/vocab.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

RankCoord at(std::int64_t tp, std::int64_t cp, std::int64_t dp, std::int64_t pp) {
  RankCoord c;
  c[Dim::kTP] = tp;
  c[Dim::kCP] = cp;
  c[Dim::kDP] = dp;
  c[Dim::kPP] = pp;
  return c;
}

using Ranks = std::vector<std::int64_t>;

TEST(Layout, MegatronOrderTpInnermostThenDpThenPp) {
  Plan p;
  p.tp = 4;
  p.dp = 2;
  p.pp = 2;
  const Layout l(p);
  EXPECT_EQ(l.world_size(), 16);
  EXPECT_EQ(l.rank(at(1, 0, 0, 0)), 1);
  EXPECT_EQ(l.rank(at(0, 0, 1, 0)), 4);
  EXPECT_EQ(l.rank(at(0, 0, 0, 1)), 8);
  EXPECT_EQ(l.rank(at(3, 0, 1, 1)), 15);
  for (std::int64_t r = 0; r < 16; ++r) EXPECT_EQ(l.rank(l.coord(r)), r);
  EXPECT_EQ(l.group(Dim::kTP, 6), (Ranks{4, 5, 6, 7}));
  EXPECT_EQ(l.group(Dim::kDP, 14), (Ranks{10, 14}));
  EXPECT_EQ(l.group(Dim::kPP, 5), (Ranks{5, 13}));
  EXPECT_EQ(l.group(Dim::kCP, 5), (Ranks{5}));  // size 1: the rank alone
  EXPECT_EQ(l.neighbour(5, Dim::kPP, 1), 13);
  EXPECT_EQ(l.neighbour(5, Dim::kPP, -1), 13);  // wraps around
  EXPECT_EQ(l.stage_ranks(1), (Ranks{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(l.stage_leader(1), 8);
  EXPECT_EQ(l.groups_in_stage(Dim::kDP, 1),
            (std::vector<Ranks>{{8, 12}, {9, 13}, {10, 14}, {11, 15}}));
  EXPECT_EQ(l.groups_in_stage(Dim::kTP, 0), (std::vector<Ranks>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // From the leader to each DP group of the stage: the TP coordinates, 0..3 (offsets 0..3).
  EXPECT_EQ(l.offset_residues({Dim::kDP}, 8), (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(l.offset_residues({Dim::kTP}, 8), (Ranks{0, 4}));
  // To every rank of the stage, offsets 0..7, the least of each residue.
  EXPECT_EQ(l.offset_residues({}, 16), (Ranks{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(l.offset_residues({}, 3), (Ranks{0, 1, 2}));
  EXPECT_EQ(l.offset_residues({Dim::kTP, Dim::kDP}, 8), (Ranks{0}));
}

// Megatron-LM's test of its rank generator: tp 2, cp 2, dp 2, pp 2 in tp-cp-ep-dp-pp order puts
// CP between TP and DP; --use-tp-pp-dp-mapping (tp-cp-ep-pp-dp) swaps DP and PP.
TEST(Layout, ContextParallelAndOtherOrders) {
  Plan p;
  p.tp = 2;
  p.cp = 2;
  p.dp = 2;
  p.pp = 2;
  const Layout l(p);
  EXPECT_EQ(l.world_size(), 16);
  EXPECT_EQ(l.group(Dim::kCP, 0), (Ranks{0, 2}));
  EXPECT_EQ(l.group(Dim::kDP, 1), (Ranks{1, 5}));
  EXPECT_EQ(l.group(Dim::kPP, 3), (Ranks{3, 11}));
  EXPECT_EQ(l.rank(at(1, 1, 1, 1)), 15);
  p.rank_order = *parse_rank_order("tp-cp-ep-pp-dp");
  const Layout m(p);
  EXPECT_EQ(m.group(Dim::kPP, 0), (Ranks{0, 4}));
  EXPECT_EQ(m.group(Dim::kDP, 0), (Ranks{0, 8}));
  EXPECT_EQ(m.stage_ranks(1), (Ranks{4, 5, 6, 7, 12, 13, 14, 15}));
  EXPECT_EQ(m.stage_leader(1), 4);
  EXPECT_EQ(m.neighbour(13, Dim::kPP, 1), 9);
  // Stage 1 is 4..7 and 12..15: offsets 0..3 and 8..11 from its leader.
  EXPECT_EQ(m.offset_residues({}, 16), (Ranks{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(m.offset_residues({}, 4), (Ranks{0, 1, 2, 3}));
  EXPECT_EQ(m.offset_residues({Dim::kDP}, 16), (Ranks{0, 1, 2, 3}));
}

TEST(Layout, RankOrderParsing) {
  EXPECT_EQ(to_string(kMegatronOrder), "tp-cp-ep-dp-pp");
  const auto o = parse_rank_order("pp-dp-ep-cp-tp");
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(to_string(*o), "pp-dp-ep-cp-tp");
  EXPECT_FALSE(parse_rank_order("tp-dp-pp").has_value());           // missing dimensions
  EXPECT_FALSE(parse_rank_order("tp-tp-ep-dp-pp").has_value());     // twice
  EXPECT_FALSE(parse_rank_order("tp-cp-ep-dp-pp-tp").has_value());  // too many
  EXPECT_FALSE(parse_rank_order("tp-cp-ep-dp-xx").has_value());
  EXPECT_FALSE(parse_rank_order("").has_value());
}

// The rank-order fixes' one move: a dimension taken out and put back just inside another, or
// innermost; the rest keep their order.
TEST(Layout, RankOrderMoves) {
  const auto order = [](const char* text) { return *parse_rank_order(text); };
  const auto moved = [](const RankOrder& o, Dim d, std::optional<Dim> anchor) {
    return to_string(moved_after(o, d, anchor));
  };
  EXPECT_EQ(moved(order("cp-ep-tp-dp-pp"), Dim::kTP, std::nullopt), "tp-cp-ep-dp-pp");
  EXPECT_EQ(moved(order("tp-cp-dp-ep-pp"), Dim::kEP, Dim::kTP), "tp-ep-cp-dp-pp");
  EXPECT_EQ(moved(order("ep-cp-tp-dp-pp"), Dim::kEP, Dim::kTP), "cp-tp-ep-dp-pp");
  EXPECT_EQ(moved(order("tp-dp-pp-ep-cp"), Dim::kCP, Dim::kTP), "tp-cp-dp-pp-ep");
  EXPECT_EQ(moved(order("tp-cp-ep-dp-pp"), Dim::kCP, Dim::kTP), "tp-cp-ep-dp-pp");
  EXPECT_EQ(moved(order("dp-pp-tp-cp-ep"), Dim::kDP, Dim::kEP), "pp-tp-cp-ep-dp");
}

TEST(Layout, GroupSpanOnNodes) {
  const GroupSpan tp8 = group_span({0, 1, 2, 3, 4, 5, 6, 7}, 8);
  EXPECT_TRUE(tp8.in_one_node());
  EXPECT_EQ(tp8.per_node, 8);
  const GroupSpan dp = group_span({0, 8, 16, 24}, 8);
  EXPECT_EQ(dp.nodes, 4);
  EXPECT_TRUE(dp.one_per_node());
  const GroupSpan two = group_span({0, 4, 8, 12}, 8);  // tp 4: two DP members per node
  EXPECT_EQ(two.nodes, 2);
  EXPECT_EQ(two.per_node, 2);
  EXPECT_EQ(group_span({0, 1, 8}, 8).per_node, 0);  // uneven
}

TEST(Vocab, FrameworkPaddingRules) {
  EXPECT_EQ(padded_vocab(128256, 128, 1), 128256);
  EXPECT_EQ(padded_vocab(128256, 128, 8), 129024);  // Megatron default at tp 8
  EXPECT_EQ(padded_vocab(50257, 128, 1), 50304);
  EXPECT_EQ(padded_vocab(50257, 128, 8), 51200);
  EXPECT_EQ(padded_vocab(128256, 64, 8), 128512);  // ColossalAI at tp 8 (issue #6108)
  EXPECT_EQ(padded_vocab(128256, 64, 4), 128256);  // ColossalAI at tp 4: no padding
  EXPECT_EQ(padded_vocab(50277, 1, 2), 50278);     // nanotron at tp 2
  Plan p;
  EXPECT_EQ(p.vocab_multiple(), 128);
  p.partition = "nanotron";
  EXPECT_EQ(p.effective_framework(), Framework::kNanotron);
  EXPECT_EQ(p.vocab_multiple(), 1);
  p.framework = Framework::kColossalAI;
  EXPECT_EQ(p.vocab_multiple(), 64);
  p.vocab_divisible_by = 256;
  EXPECT_EQ(p.vocab_multiple(), 256);
}

class PlanRules : public ::testing::Test {
 protected:
  std::string error_of(const Plan& p, const PlanOrigin& origin = {}) {
    try {
      validate_plan(p, model_, platform_, origin);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(valid)";
  }
  Plan base() const {
    Plan p;
    p.tp = 4;
    p.pp = 4;
    p.dp = 4;
    p.gbs = 128;
    p.seq_len = 8192;
    return p;
  }
  Model model_ = test::catalog_model("llama3.1-70b");
  Platform platform_ = test::catalog_platform("h100-sxm-ndr");
};

TEST_F(PlanRules, OneClearLinePerRule) {
  EXPECT_EQ(error_of(base()), "(valid)");
  Plan p = base();
  p.tp = 3;
  EXPECT_EQ(error_of(p), "--tp: must divide the attention heads (64), got 3");
  p.tp = 16;
  EXPECT_EQ(error_of(p), "--tp: must divide the KV heads (8), got 16");
  p = base();
  p.gbs = 2;
  EXPECT_EQ(error_of(p), "--gbs: must be at least mbs x dp (1 x 4 = 4), got 2");
  p = base();
  p.partition = "nanotron";
  p.account_for_loss_in_pipeline_split = true;
  EXPECT_EQ(error_of(p),
            "--account-for-loss-in-pipeline-split: is a Megatron-LM option of the uniform "
            "partition, not of \"nanotron\"");
  p = base();
  p.pp = 81;
  EXPECT_EQ(error_of(p), "--pp: exceeds the number of layers (80)");
  p = base();
  p.gpus = 32;
  EXPECT_EQ(error_of(p), "--gpus: is 32 but tp x pp x dp = 4 x 4 x 4 = 64");
  p = base();
  p.seq_len = 0;
  EXPECT_EQ(error_of(p), "--seq-len: is required (a positive integer)");
}

// Sequence parallelism, recomputation and ZeRO 0-3 are accepted (the memory model uses them).
TEST_F(PlanRules, MemoryOptionsAreAccepted) {
  Plan p = base();
  p.sp = true;
  p.recompute = Recompute::kSelective;
  p.zero = 1;
  EXPECT_EQ(error_of(p), "(valid)");
  p.recompute = Recompute::kFull;
  p.zero = 4;
  EXPECT_EQ(error_of(p), "--zero: must be a ZeRO stage in [0, 3], got 4");
  p.zero = 2;
  EXPECT_EQ(error_of(p),
            "--zero: ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism (DeepSpeed's "
            "PipelineEngine asserts it); use --zero 1 or --pp 1");
  p.pp = 1;
  p.dp = 16;
  p.zero = 3;
  EXPECT_EQ(error_of(p), "(valid)");
}

TEST_F(PlanRules, ErrorsNameTheScenarioWhenTheValueCameFromIt) {
  Plan p = base();
  p.tp = 3;
  PlanOrigin origin;
  origin.where["tp"] = "s.json: $.plan.tp";
  EXPECT_EQ(error_of(p, origin), "s.json: $.plan.tp: must divide the attention heads (64), got 3");
}

TEST_F(PlanRules, Fp8NeedsFp8TensorCores) {
  platform_ = test::catalog_platform("a100-sxm-hdr");
  Plan p = base();
  p.precision = Precision::kFP8;
  EXPECT_EQ(error_of(p),
            "--precision: fp8 needs FP8 tensor cores; NVIDIA A100 SXM4 80GB has none (platform "
            "a100-sxm-hdr)");
}

TEST_F(PlanRules, Schedules) {
  Plan p = base();
  p.vp = 2;
  EXPECT_EQ(error_of(p), "--vp: virtual stages need --schedule interleaved (got 1f1b)");
  p.schedule = ScheduleKind::kInterleaved;
  EXPECT_EQ(error_of(p), "(valid)");
  p.vp = 1;
  EXPECT_EQ(error_of(p), "--schedule: interleaved needs --vp 2 or more");
  p = base();
  p.schedule = ScheduleKind::kInterleaved;
  p.vp = 2;
  p.gbs = 24;  // 6 micro-batches in groups of 4: a last group of 2 < pp
  EXPECT_EQ(error_of(p),
            "--gbs: Megatron-LM's interleaved schedule refuses 6 micro-batches per step with pp 4 "
            "and groups of 4: the last micro-batch group must be empty or hold at least pp "
            "micro-batches");
  p.microbatch_group_size_per_vp_stage = 6;  // one group of 6, as Megatron-LM allows
  EXPECT_EQ(error_of(p), "(valid)");
  p.vp = 21;
  EXPECT_EQ(error_of(p), "--vp: pp x vp = 84 virtual stages exceed the number of layers (80)");
  // Megatron-LM counts the embedding and the loss as layers when it accounts for them.
  p.account_for_embedding_in_pipeline_split = true;
  p.account_for_loss_in_pipeline_split = true;
  EXPECT_EQ(error_of(p),
            "--vp: pp x vp = 84 virtual stages exceed the number of layers (82, embedding and "
            "loss included)");
  p = base();
  p.microbatch_group_size_per_vp_stage = 4;
  EXPECT_EQ(error_of(p),
            "--microbatch-group-size-per-vp-stage: applies to the interleaved schedule only");
}

TEST_F(PlanRules, Overlap) {
  Plan p = base();
  p.overlap_param_gather = true;
  p.overlap_grad_reduce = true;
  EXPECT_EQ(error_of(p),
            "--overlap-param-gather: needs the distributed optimizer (--zero 1 or more), as in "
            "Megatron-LM");
  p.zero = 1;
  EXPECT_EQ(error_of(p), "(valid)");
  p.overlap_grad_reduce = false;
  EXPECT_EQ(error_of(p),
            "--overlap-param-gather: needs --overlap-grad-reduce, as in Megatron-LM (the gathers "
            "reuse its buckets)");
  p = base();
  p.fp8_param_gather = true;
  EXPECT_EQ(error_of(p),
            "--fp8-param-gather: needs --precision fp8 and the distributed optimizer (--zero 1 or "
            "more), as in Megatron-LM");
  p.precision = Precision::kFP8;
  p.zero = 1;
  EXPECT_EQ(error_of(p), "(valid)");
  p = base();
  p.tp = 1;
  p.dp = 16;
  p.tp_comm_overlap = true;
  EXPECT_EQ(error_of(p), "--tp-comm-overlap: needs --tp 2 or more");
  p.sp = true;  // Megatron-LM turns it off at tp 1, and then refuses TP overlap without it
  EXPECT_EQ(error_of(p), "--tp-comm-overlap: needs --tp 2 or more");
  p.tp_comm_overlap = false;
  EXPECT_EQ(error_of(p), "(valid)");
  // Megatron-LM overlaps TP communication only with sequence parallelism.
  p = base();
  p.tp_comm_overlap = true;
  p.sp = false;
  ASSERT_GT(p.tp, 1);
  EXPECT_EQ(error_of(p), "--tp-comm-overlap: needs --sp (sequence parallelism)");
  // Outside the interleaved schedule only the value the schedule has anyway is taken.
  p = base();
  p.overlap_p2p_comm = true;
  EXPECT_EQ(error_of(p).rfind("--overlap-p2p-comm: applies to the interleaved schedule only", 0),
            0u);
  p.overlap_p2p_comm = false;
  EXPECT_EQ(error_of(p), "(valid)");
  p.schedule = ScheduleKind::kZBH1;
  EXPECT_EQ(error_of(p).rfind("--overlap-p2p-comm: applies to the interleaved schedule only", 0),
            0u);
  p.overlap_p2p_comm = true;
  EXPECT_EQ(error_of(p), "(valid)");
  // Megatron-LM's default: on with interleaving, off for 1F1B; zero bubble always overlaps.
  p = base();
  EXPECT_FALSE(p.p2p_overlap());
  p.schedule = ScheduleKind::kInterleaved;
  EXPECT_TRUE(p.p2p_overlap());
  p.overlap_p2p_comm = false;
  EXPECT_FALSE(p.p2p_overlap());
  p = base();
  p.schedule = ScheduleKind::kZBH1;
  EXPECT_TRUE(p.p2p_overlap());
}

}  // namespace
}  // namespace trainsim
