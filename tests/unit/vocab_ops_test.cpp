// The vocabulary-parallel blocks' TP calls as Megatron-Core posts them (sim/cost/vocab_ops.hpp):
// which call, on what buffer, and whether it runs after the pass or beside which GEMM; and the
// LM head's calls when its weight gradient is deferred to the pipeline flush.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/cost/stage_cost.hpp"
#include "sim/cost/vocab_ops.hpp"
#include "sim/graph/builder.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// A pass's call as the tests compare it: bytes per call, calls, beside the pass or after it.
struct Call {
  CollectiveKind kind;
  double bytes;
  std::int64_t count;
  bool alongside;
  bool operator==(const Call&) const = default;
};

std::vector<Call> calls(const BlockPass& p) {
  std::vector<Call> out;
  for (const auto& c : p.collectives) {
    EXPECT_EQ(c.dim, Dim::kTP);
    out.push_back({c.kind, c.bytes / static_cast<double>(c.count), c.count, c.alongside});
  }
  return out;
}

// Each call paired with a GEMM: its kind and the GEMM's name (all bulk: independent of it).
std::vector<std::pair<CollectiveKind, std::string>> pairs(const BlockPass& p) {
  std::vector<std::pair<CollectiveKind, std::string>> out;
  for (const auto& o : p.overlaps) {
    EXPECT_EQ(o.method, OverlapMethod::kBulk);
    EXPECT_EQ(o.kernels.size(), 1u);
    out.emplace_back(o.kind, o.kernels.front());
  }
  return out;
}

std::vector<std::string> kernel_names(const BlockPass& p) {
  std::vector<std::string> out;
  for (const auto& k : p.kernels) out.push_back(k.name);
  return out;
}

// TP 4, two sequences of 4,096 tokens a micro-batch.
LayerShape shape_of(const std::string& model, bool sp, std::int64_t tp = 4) {
  const Model m = test::catalog_model(model);
  Plan p;
  p.tp = tp;
  p.sp = sp;
  p.mbs = 2;
  p.seq_len = 4096;
  return layer_shape(m, p, m.vocab_size);
}

BlockPass pass_of(BlockKind kind, bool backward, const LayerShape& s) {
  BlockPass p;
  vocab_block(kind, backward, s, p);
  return p;
}

constexpr auto kAG = CollectiveKind::kAllGather;
constexpr auto kRS = CollectiveKind::kReduceScatter;
constexpr auto kAR = CollectiveKind::kAllReduce;
constexpr double kInput = 8192.0 * 4096.0 * 2.0;  // T x h in BF16 (llama3.1-8b)

// Sequence parallelism reduce-scatters the looked-up rows, or with learned positions (added to
// the whole sequence) all-reduces them; its backward all-gathers the output gradient first.
TEST(VocabularyParallel, TheEmbeddingReduceScattersItsRowsWithSequenceParallelism) {
  const LayerShape sp = shape_of("llama3.1-8b", true), plain = shape_of("llama3.1-8b", false);
  EXPECT_EQ(calls(pass_of(BlockKind::kEmbedding, false, sp)),
            (std::vector<Call>{{kRS, kInput, 1, false}}));
  EXPECT_EQ(calls(pass_of(BlockKind::kEmbedding, true, sp)),
            (std::vector<Call>{{kAG, kInput, 1, false}}));
  EXPECT_EQ(calls(pass_of(BlockKind::kEmbedding, false, plain)),
            (std::vector<Call>{{kAR, kInput, 1, false}}));
  EXPECT_TRUE(calls(pass_of(BlockKind::kEmbedding, true, plain)).empty());
  const LayerShape learned = shape_of("gpt3-175b", true);
  ASSERT_TRUE(learned.learned_positions);
  const double gpt3 = 8192.0 * 12288.0 * 2.0;
  EXPECT_EQ(calls(pass_of(BlockKind::kEmbedding, false, learned)),
            (std::vector<Call>{{kAR, gpt3, 1, false}}));
  EXPECT_EQ(calls(pass_of(BlockKind::kEmbedding, true, learned)),
            (std::vector<Call>{{kAG, gpt3, 1, false}}));
  EXPECT_TRUE(
      calls(pass_of(BlockKind::kEmbedding, false, shape_of("llama3.1-8b", true, 1))).empty());
}

// Megatron-Core's own ColumnParallelLinear: with sequence parallelism the forward gathers the
// input before the GEMM; the backward gathers it again beside the input-gradient GEMM and posts
// the input gradient's reduce-scatter (an all-reduce without SP) beside the weight-gradient GEMM.
TEST(VocabularyParallel, TheLmHeadGathersItsInputAndPostsItsGradientCallsBesideItsGemms) {
  const LayerShape sp = shape_of("llama3.1-8b", true), plain = shape_of("llama3.1-8b", false);
  EXPECT_EQ(calls(pass_of(BlockKind::kLmHead, false, sp)),
            (std::vector<Call>{{kAG, kInput, 1, false}}));
  const BlockPass backward = pass_of(BlockKind::kLmHead, true, sp);
  EXPECT_EQ(calls(backward), (std::vector<Call>{{kAG, kInput, 1, true}, {kRS, kInput, 1, true}}));
  EXPECT_EQ(pairs(backward), (std::vector<std::pair<CollectiveKind, std::string>>{
                                 {kAG, "lm_head.dgrad"}, {kRS, "lm_head.wgrad"}}));
  EXPECT_TRUE(calls(pass_of(BlockKind::kLmHead, false, plain)).empty());
  const BlockPass plain_backward = pass_of(BlockKind::kLmHead, true, plain);
  EXPECT_EQ(calls(plain_backward), (std::vector<Call>{{kAR, kInput, 1, true}}));
  EXPECT_EQ(pairs(plain_backward),
            (std::vector<std::pair<CollectiveKind, std::string>>{{kAR, "lm_head.wgrad"}}));
}

// A deferring backward computes no weight gradient: no gather of the input, and the input
// gradient's call after the pass. The flush's GEMM has its input's gather beside it with SP.
TEST(VocabularyParallel, ADeferringBackwardPostsTheInputGradientCallAfterItsGemm) {
  const LayerShape sp = shape_of("llama3.1-8b", true), plain = shape_of("llama3.1-8b", false);
  const BlockPass deferring = lm_head_deferring_backward(sp);
  EXPECT_EQ(kernel_names(deferring), std::vector<std::string>{"lm_head.dgrad"});
  EXPECT_EQ(calls(deferring), (std::vector<Call>{{kRS, kInput, 1, false}}));
  EXPECT_TRUE(deferring.overlaps.empty());
  EXPECT_EQ(calls(lm_head_deferring_backward(plain)), (std::vector<Call>{{kAR, kInput, 1, false}}));
  const BlockPass flush = lm_head_flush(sp);
  EXPECT_EQ(kernel_names(flush), std::vector<std::string>{"lm_head.wgrad"});
  EXPECT_EQ(calls(flush), (std::vector<Call>{{kAG, kInput, 1, true}}));
  EXPECT_EQ(pairs(flush),
            (std::vector<std::pair<CollectiveKind, std::string>>{{kAG, "lm_head.wgrad"}}));
  EXPECT_TRUE(calls(lm_head_flush(plain)).empty());
}

// llama3.1-8b, TP 2 with SP, PP 2, 8 micro-batches of 2,048 tokens, two LM-head weight
// gradients deferred: the last stage's deferring backward is the backward less that GEMM, its
// reduce-scatter moved after the pass and its gather gone; the flush gathers the first input on
// the compute stream, then runs both GEMMs, the second's input gathered beside them (the second
// GEMM waits only where that gather outlasts the first).
TEST(VocabularyParallel, TheFlushGathersTheFirstInputBeforeItsGemms) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  Plan p;
  p.tp = 2;
  p.sp = true;
  p.pp = 2;
  p.gbs = 8;
  p.seq_len = 2048;
  p.defer_embedding_wgrad_compute = true;
  p.wgrad_deferral_limit = 2;
  const CostModel costs = compute_costs(m, platform, p, test::uniform_partition(m, 2));
  const StageCost& last = costs.stages[1];
  const auto count = [](const PassCost& pass, CollectiveKind kind, bool alongside) {
    std::int64_t n = 0;
    for (const auto& c : pass.collectives) {
      if (c.dim == Dim::kTP && c.kind == kind && c.alongside == alongside) n += c.count;
    }
    return n;
  };
  const PassCost& whole = last.backward;
  const PassCost& deferring = last.backward_deferring_lm_head_wgrad;
  EXPECT_EQ(count(deferring, kRS, true), count(whole, kRS, true) - 1);
  EXPECT_EQ(count(deferring, kRS, false), count(whole, kRS, false) + 1);
  EXPECT_EQ(count(deferring, kAG, true), count(whole, kAG, true) - 1);
  EXPECT_EQ(count(deferring, kAG, false), count(whole, kAG, false));
  const double input = 2048.0 * 4096.0 * 2.0;
  ASSERT_EQ(last.lm_head_wgrad.collectives.size(), 1u);
  EXPECT_DOUBLE_EQ(last.lm_head_wgrad.collectives[0].bytes, input);
  const TaskGraph g = build_task_graph(p, costs);
  for (const auto& r : g.ranks) {
    if (r.stage != 1) continue;
    std::size_t flush = 0;
    for (std::size_t i = 0; i < r.ops.size(); ++i) {
      if (r.ops[i].type == OpType::kCompute && r.ops[i].compute == ComputeKind::kBackwardWeight) {
        flush = i;
      }
    }
    ASSERT_GT(flush, 0u);
    EXPECT_DOUBLE_EQ(r.ops[flush].seconds,
                     2 * last.lm_head_wgrad.seconds - last.lm_head_wgrad.overlap_stall());
    const Op& gather = r.ops[flush - 1];
    EXPECT_EQ(gather.type, OpType::kCollective);
    EXPECT_EQ(gather.stream, Stream::kCompute);
    EXPECT_EQ(gather.comm, CommKind::kTP);
    EXPECT_EQ(gather.collective, kAG);
    EXPECT_DOUBLE_EQ(gather.bytes, input);
    // The second micro-batch's gather, beside the GEMMs on the TP stream.
    const Op& beside = r.ops[flush + 1];
    EXPECT_EQ(beside.type, OpType::kCollective);
    EXPECT_EQ(beside.stream, Stream::kTP);
    EXPECT_EQ(beside.collective, kAG);
    EXPECT_EQ(beside.count, 1);
    EXPECT_DOUBLE_EQ(beside.bytes, input);
  }
}

}  // namespace
}  // namespace trainsim
