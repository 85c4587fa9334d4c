#include <gtest/gtest.h>

#include <string>

#include "sim/collective/group_collectives.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/cost/tp_overlap.hpp"
#include "sim/platform/topology.hpp"
#include "tests/support/pass_kernels.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// Closed forms of the three methods (tp_overlap.hpp), in units of time.
TEST(TpOverlap, BulkStallsOnlyForWhatOutlastsTheGemm) {
  EXPECT_DOUBLE_EQ(overlap_stall(OverlapMethod::kBulk, 4, 3, 4), 0);
  EXPECT_DOUBLE_EQ(overlap_stall(OverlapMethod::kBulk, 4, 7, 4), 3);
}

TEST(TpOverlap, RingExchangeHidesWhatEachChunkOfGemmCovers) {
  // 4 chunks of 1; three transfers of 1 each arrive as chunks finish: nothing waits.
  EXPECT_DOUBLE_EQ(overlap_stall(OverlapMethod::kRingExchange, 4, 3, 4), 0);
  // Transfers of 2: chunk 0 (local) 1, then 3 x 2 = 7 in all, 3 beyond the GEMM = C + G/n - G.
  EXPECT_DOUBLE_EQ(overlap_stall(OverlapMethod::kRingExchange, 4, 6, 4), 6 + 1 - 4);
  // On 2 GPUs: one transfer beside the local half.
  EXPECT_DOUBLE_EQ(overlap_stall(OverlapMethod::kRingExchange, 4, 3, 2), 1);
}

TEST(TpOverlap, PipelinedReduceScatterAlwaysExposesItsLastChunk) {
  ASSERT_EQ(kPipelinedSplits, 4);
  // GEMM-bound: the last chunk's reduce-scatter, C / 4.
  EXPECT_DOUBLE_EQ(overlap_stall(OverlapMethod::kPipelined, 4, 2, 8), 0.5);
  // Transfer-bound: the first GEMM chunk, then every transfer: C + G/4 - G.
  EXPECT_DOUBLE_EQ(overlap_stall(OverlapMethod::kPipelined, 4, 8, 8), 8 + 1 - 4);
}

struct Fp8Tp4 {
  Model model = test::catalog_model("nemotron4-15b");
  Platform platform = test::catalog_platform("h100-sxm-ndr");
  Plan plan;
  Fp8Tp4() {
    plan.tp = 4;
    plan.sp = true;
    plan.mbs = 4;
    plan.gbs = 4;
    plan.seq_len = 4096;
    plan.precision = Precision::kFP8;
  }
  CostModel costs() const {
    return compute_costs(model, platform, plan, test::uniform_partition(model, 1));
  }
};

// The forward's stall is each overlapped call's, priced on the TP group (GPUs 0-3 of a node):
// gathers of the FP8 operand (1 byte an element) by ring exchange before the QKV and MLP-up
// GEMMs, reduce-scatters of the BF16 output pipelined after the output and MLP-down GEMMs, once
// per layer.
TEST(TpOverlap, ForwardStallIsTheSumOfItsCallsOnTheTpGroup) {
  Fp8Tp4 c;
  c.plan.tp_comm_overlap = true;
  const CostModel costs = c.costs();
  const PassCost& fwd = costs.stages[0].forward;
  const Topology topology(c.platform, 4);
  const GroupCollectives group(topology, Members{0, 1, 2, 3});
  const double T = 4 * 4096.0, h = 6144;
  const auto call = [&](CollectiveKind kind, double bytes) {
    return group.choose(kind, bytes, 1).seconds;
  };
  const auto stall = [&](OverlapMethod method, const std::string& gemm, double comm) {
    return overlap_stall(method, test::pass_kernel(fwd, "decoder." + gemm).time.seconds, comm, 4);
  };
  const double gather = call(CollectiveKind::kAllGather, T * h);
  const double scatter = call(CollectiveKind::kReduceScatter, T * h * 2);
  const double per_layer = stall(OverlapMethod::kRingExchange, "qkv_proj", gather) +
                           stall(OverlapMethod::kPipelined, "out_proj", scatter) +
                           stall(OverlapMethod::kRingExchange, "mlp_up", gather) +
                           stall(OverlapMethod::kPipelined, "mlp_down", scatter);
  ASSERT_GT(per_layer, 0);
  EXPECT_NEAR(fwd.overlap_stall(), 32 * per_layer, 1e-12);
  double kernels = 0;
  for (const auto& k : fwd.kernels) kernels += k.time.seconds * static_cast<double>(k.count);
  EXPECT_NEAR(fwd.seconds, kernels + fwd.overlap_stall(), 1e-12);
  // Every decoder call runs beside the pass; after it the embedding's reduce-scatter, the LM
  // head's gather of its (BF16) input, and the loss's all-reduces (Megatron-Core's own linear
  // and embedding, no userbuffers).
  std::int64_t beside = 0;
  for (const auto& load : fwd.collectives) {
    if (load.dim != Dim::kTP) continue;  // the FP8 scales' reduction
    if (load.alongside) beside += load.count;
    const double each = load.bytes / static_cast<double>(load.count);
    switch (load.kind) {
      case CollectiveKind::kAllGather:
        EXPECT_DOUBLE_EQ(each, load.alongside ? T * h : T * h * 2);
        EXPECT_EQ(load.count, load.alongside ? 64 : 1);
        break;
      case CollectiveKind::kReduceScatter:
        EXPECT_DOUBLE_EQ(each, T * h * 2);
        EXPECT_EQ(load.count, load.alongside ? 64 : 1);
        break;
      default:
        EXPECT_FALSE(load.alongside) << to_string(load.kind);
        EXPECT_EQ(load.count, 3);
    }
  }
  EXPECT_EQ(beside, 128);
}

// Without --tp-comm-overlap the forward's calls run after the pass and stall nothing, while the
// backward's re-gathers and input-gradient reduce-scatters still run beside its GEMMs (posted
// asynchronously by Megatron-LM and Transformer Engine alike), the LM head's too.
TEST(TpOverlap, WithoutUserbuffersOnlyTheBackwardsAsynchronousCallsOverlap) {
  Fp8Tp4 c;
  const StageCost s = c.costs().stages[0];
  EXPECT_EQ(s.forward.overlap_stall(), 0);
  for (const auto& load : s.forward.collectives) EXPECT_FALSE(load.alongside);
  std::int64_t beside = 0, after = 0;
  for (const auto& load : s.backward.collectives) {
    if (load.dim != Dim::kTP) continue;
    (load.alongside ? beside : after) += load.count;
  }
  // Re-gather and reduce-scatter of QKV, MLP-up and the LM head.
  EXPECT_EQ(beside, 4 * 32 + 2);
  // Output gradients of out_proj and mlp_down; the embedding's.
  EXPECT_EQ(after, 2 * 32 + 1);
  EXPECT_GE(s.backward.overlap_stall(), 0);
}

// Megatron-Core turns --tp-comm-overlap off for a multi-latent-attention model (its first
// layer's q_down_proj, a Transformer Engine linear with a buffer name TE does not overlap, sets
// the shared config's switch to False): DeepSeek-V3's decoder layers cost exactly what they cost
// without it, while a model without MLA keeps its overlap, and other frameworks keep theirs.
TEST(TpOverlap, MegatronDropsUserbuffersForMultiLatentAttention) {
  const Model mla = test::catalog_model("deepseek-v3");
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  Plan plan;
  plan.tp = 2;
  plan.sp = true;
  plan.mbs = 1;
  plan.gbs = 1;
  plan.seq_len = 4096;
  plan.ep = 1;
  plan.tp_comm_overlap = true;
  EXPECT_FALSE(decoder_tp_overlap(mla, plan));
  EXPECT_TRUE(decoder_tp_overlap(test::catalog_model("nemotron4-15b"), plan));
  Plan other = plan;
  other.framework = Framework::kNanotron;
  EXPECT_TRUE(decoder_tp_overlap(mla, other));
  Plan off = plan;
  off.tp_comm_overlap = false;
  EXPECT_FALSE(decoder_tp_overlap(mla, off));
  // Two dense and two MoE layers, costed with the switch on and off.
  Model small = mla;
  small.num_layers = 4;
  small.moe.first_dense_layers = 2;
  small.mtp_layers = 0;
  const auto partition = test::uniform_partition(small, 1);
  const StageCost on = compute_costs(small, platform, plan, partition).stages[0];
  const StageCost without = compute_costs(small, platform, off, partition).stages[0];
  EXPECT_EQ(on.forward.overlap_stall(), 0);
  EXPECT_DOUBLE_EQ(on.forward.seconds, without.forward.seconds);
  EXPECT_DOUBLE_EQ(on.backward.seconds, without.backward.seconds);
  ASSERT_EQ(on.forward.collectives.size(), without.forward.collectives.size());
  for (std::size_t i = 0; i < on.forward.collectives.size(); ++i) {
    EXPECT_EQ(on.forward.collectives[i].alongside, without.forward.collectives[i].alongside);
  }
}

}  // namespace
}  // namespace trainsim
