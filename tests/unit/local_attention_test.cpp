// Local attention: GPT-OSS's sliding window on every other layer, Llama 4's chunks on three
// layers of four, Mistral's window on every layer; each local layer's flash attention costed as
// causal blocks (a chunk, or two windows: s x w scores), the global layers' over the sequence.
#include <gtest/gtest.h>

#include "sim/cost/stage_cost.hpp"
#include "sim/model/model.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Model hf(const std::string& name) {
  return load_model(test::source_dir() + "/tests/data/hf/" + name + "/config.json");
}

TEST(LocalAttention, CatalogAndHuggingFaceAgree) {
  for (const auto& [name, kind, size, every] :
       {std::tuple{"gpt-oss-120b", LocalAttention::Kind::kSliding, 128, 2},
        std::tuple{"llama4-maverick", LocalAttention::Kind::kChunked, 8192, 4}}) {
    SCOPED_TRACE(name);
    for (const Model& m : {test::catalog_model(name), hf(name)}) {
      EXPECT_EQ(m.local_attention.kind, kind);
      EXPECT_EQ(m.local_attention.size, size);
      EXPECT_EQ(m.local_attention.global_every, every);
    }
  }
  const Model oss = test::catalog_model("gpt-oss-120b");
  EXPECT_TRUE(is_local_attention_layer(oss, 0));
  EXPECT_FALSE(is_local_attention_layer(oss, 1));
  const Model maverick = test::catalog_model("llama4-maverick");
  EXPECT_TRUE(is_local_attention_layer(maverick, 2));
  EXPECT_FALSE(is_local_attention_layer(maverick, 3));
  // Mistral 7B v0.1: a 4,096-token window on every layer.
  const Model mistral = hf("mistral-7b");
  EXPECT_EQ(mistral.local_attention.kind, LocalAttention::Kind::kSliding);
  EXPECT_EQ(mistral.local_attention.size, 4096);
  EXPECT_EQ(mistral.local_attention.global_every, 0);
  EXPECT_TRUE(is_local_attention_layer(mistral, 31));
  EXPECT_FALSE(is_local_attention_layer(test::catalog_model("llama3.1-8b"), 0));
}

// (sequence, launches) of every forward attention kernel of stage 0, in order.
std::vector<std::pair<std::int64_t, std::int64_t>> attention_kernels(const Model& m,
                                                                     std::int64_t seq,
                                                                     std::int64_t cp = 1,
                                                                     CpComm comm = CpComm::kP2P) {
  Plan p;
  p.tp = cp > 1 ? 4 : 8;
  p.cp = cp;
  p.cp_comm = comm;
  p.ep = 8;
  p.gbs = 8;
  p.seq_len = seq;
  const auto part = test::uniform_partition(m, 1);
  const CostModel c = compute_costs(m, test::catalog_platform("h100-sxm-ndr"), p, part);
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const auto& k : c.stages[0].forward.kernels) {
    if (k.name != "decoder.attention") continue;
    out.emplace_back(std::get<AttentionShape>(k.shape).seq, k.count);
  }
  return out;
}

TEST(LocalAttention, LocalLayersCostedAsCausalBlocks) {
  // GPT-OSS 120B (36 layers, 18 of them sliding over 128 tokens) at 4,096 tokens: 18 global
  // layers over 4,096, 18 local ones as 16 causal blocks of 256 each.
  const auto oss = attention_kernels(test::catalog_model("gpt-oss-120b"), 4096);
  ASSERT_EQ(oss.size(), 2u);
  EXPECT_EQ(oss[0], (std::pair<std::int64_t, std::int64_t>{4096, 18}));
  EXPECT_EQ(oss[1], (std::pair<std::int64_t, std::int64_t>{256, 18 * 16}));
  // Llama 4 Maverick (48 layers, 36 chunked over 8,192) at 32,768 tokens: 4 chunks each; at
  // 8,192 a chunk is the whole sequence.
  const Model maverick = test::catalog_model("llama4-maverick");
  // Its global layers (every fourth) are all MoE layers (every second): three kinds of layer.
  const auto long_seq = attention_kernels(maverick, 32768);
  ASSERT_EQ(long_seq.size(), 3u);
  std::int64_t global = 0, chunks = 0;
  for (const auto& [s, n] : long_seq) {
    EXPECT_TRUE(s == 32768 || s == 8192) << s;
    (s == 32768 ? global : chunks) += n;
  }
  EXPECT_EQ(global, 12);
  EXPECT_EQ(chunks, 36 * 4);
  for (const auto& [s, n] : attention_kernels(maverick, 8192)) EXPECT_EQ(s, 8192);
}

// Under context parallelism, as Transformer Engine runs it: a2a gives each rank the whole
// sequence on 1/cp of the heads, so a window stays local over all of it; all-gather gives each
// rank 1/cp of the queries, each against the keys its window sees; the p2p ring has no sliding
// window (Transformer Engine asserts), so such a plan is refused; chunked attention under CP is
// costed as the ring or gather computes it, whole.
TEST(LocalAttention, UnderContextParallelism) {
  const Model oss = test::catalog_model("gpt-oss-120b");
  using Kernels = std::vector<std::pair<std::int64_t, std::int64_t>>;
  EXPECT_EQ(attention_kernels(oss, 8192, 2, CpComm::kA2A), (Kernels{{8192, 18}, {256, 18 * 32}}));
  // (the global layers' first step: the rank's own 2 chunks, causal; the steps over the other
  // ranks' keys are .ring kernels)
  EXPECT_EQ(attention_kernels(oss, 8192, 2, CpComm::kAllGather),
            (Kernels{{4096, 18}, {256, 18 * 16}}));
  Plan p2p;
  p2p.tp = 4;
  p2p.sp = true;
  p2p.cp = 2;
  p2p.dp = 4;
  p2p.ep = 8;
  p2p.seq_len = 8192;
  p2p.gbs = 4;
  EXPECT_EQ(test::plan_error(p2p, oss),
            "--cp-comm-type: Transformer Engine runs sliding-window attention under context "
            "parallelism only with a2a or allgather (got p2p)");
  p2p.cp_comm = CpComm::kAllGather;
  EXPECT_EQ(test::plan_error(p2p, oss), "(valid)");
  // Llama 4's chunks under all-gather CP: every layer's attention as a global one's (the rank's
  // own 2 chunks of 8,192, then the other rank's keys).
  for (const auto& [s, n] :
       attention_kernels(test::catalog_model("llama4-maverick"), 32768, 2, CpComm::kAllGather)) {
    EXPECT_EQ(s, 16384);
  }
}

}  // namespace
}  // namespace trainsim
