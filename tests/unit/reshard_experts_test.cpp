// trainsim reshard with expert parallelism, against Megatron-Core's rules worked out by hand on
// Mixtral 8x7B: expert e of 8 on EP rank e / (8 / ep), split over expert TP; with EP (or an
// expert TP unlike TP) the experts' tensors in a flat buffer of their own per (ep, pp) rank,
// sharded over the expert-data-parallel group. An expert's matrix is 14,336 x 4,096 =
// 58,720,256 elements (a multiple of 64: no alignment gaps); an expert's 32 layers x 3 matrices
// are 5,637,144,576; the dense tensors 1,605,636,096 (a multiple of 128: no end padding).
#include <gtest/gtest.h>

#include "sim/reshard/conversion.hpp"
#include "sim/reshard/reshard.hpp"
#include "tests/support/reshard_layouts.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

constexpr std::int64_t kExpertMatrix = 58'720'256;
constexpr std::int64_t kExpertAllLayers = 32 * 3 * kExpertMatrix;
constexpr std::int64_t kDense = 1'605'636'096;

Model mixtral() {
  return test::catalog_model("mixtral-8x7b");
}

LayoutShards shards(const std::string& layout) {
  return test::reshard_shards(mixtral(), test::reshard_layout(layout));
}

ConversionPlan convert(const std::string& from, const std::string& to) {
  return plan_conversion(shards(from), shards(to), test::catalog_platform("h100-sxm-ndr"));
}

std::size_t index_of(const LayoutShards& l, const std::string& name) {
  for (std::size_t i = 0; i < l.params.size(); ++i) {
    if (l.params[i].name == name) return i;
  }
  ADD_FAILURE() << name;
  return 0;
}

TEST(ReshardExperts, FileNames) {
  EXPECT_EQ(model_file(0, 1, -1), "model pp0 tp1");
  EXPECT_EQ(model_file(2, 0, 5), "model pp2 ep5 etp0");
  EXPECT_EQ(optimizer_file(0, 1, -1, -1), "optim pp0 tp1");
  EXPECT_EQ(optimizer_file(0, 1, -1, 3), "optim pp0 tp1 dp3");
  EXPECT_EQ(optimizer_file(0, 0, 5, 1), "optim pp0 ep5 etp0 edp1");
}

// TP 2, DP 8, EP 4, expert TP 1: experts 2k and 2k + 1 on EP rank k, whole on each rank; the
// attention split over TP; the router on every rank. The dense tensors reduce over dp 8, an
// expert's over the 16 / (1 x 4) = 4 ranks holding it.
TEST(ReshardExperts, EachExpertOnOneEpRankSplitOverExpertTp) {
  const LayoutShards l = shards("tp=2,pp=1,dp=8,ep=4,etp=1");
  EXPECT_TRUE(l.experts_apart());
  for (std::int64_t e = 0; e < 8; ++e) {
    const std::size_t i =
        index_of(l, "model.layers.5.block_sparse_moe.experts." + std::to_string(e) + ".w1.weight");
    EXPECT_EQ(l.placed[i].ep_rank, e / 2);
    ASSERT_EQ(l.placed[i].shards.size(), 1u);
    EXPECT_EQ(l.placed[i].shards[0].shape, (std::vector<std::int64_t>{14336, 4096}));
    EXPECT_EQ(l.tp_of(i), 1);
    EXPECT_EQ(l.data_shards_of(i), 4);
  }
  const std::size_t q = index_of(l, "model.layers.5.self_attn.q_proj.weight");
  EXPECT_EQ(l.placed[q].ep_rank, -1);
  EXPECT_EQ(l.placed[q].shards.size(), 2u);
  EXPECT_EQ(l.data_shards_of(q), 8);
  EXPECT_EQ(l.placed[index_of(l, "model.layers.5.block_sparse_moe.gate.weight")].ep_rank, -1);
  for (std::int64_t ep = 0; ep < 4; ++ep) {
    const LayoutShards::Numel n = l.stage_shard_numel(0, ep);
    EXPECT_EQ(n.experts, 2 * kExpertAllLayers);
  }
  // Without EP and with expert TP as TP, the experts are in the dense buffer, and every rank
  // holds its TP shard of each.
  const LayoutShards plain = shards("tp=2,pp=1,dp=8");
  EXPECT_FALSE(plain.experts_apart());
  EXPECT_EQ(plain.stage_shard_numel(0, 0).experts, 8 * kExpertAllLayers / 2);
  // Replicated over TP: two norms a layer and the final one, and the routers.
  constexpr std::int64_t kReplicated = 65 * 4096 + 32 * 8 * 4096;
  EXPECT_EQ(plain.stage_shard_numel(0, 0).shared, (kDense - kReplicated) / 2 + kReplicated);
}

// Zero 1 at EP 8 on 8 GPUs: the dense buffer holds the dense tensors only; each EP rank's expert
// buffer its one expert's 96 matrices, first in reverse registration (layer 31's w2), sharded over
// an EDP group of one.
TEST(ReshardExperts, ExpertsHaveAFlatBufferPerEpRank) {
  const LayoutShards l = shards("tp=1,pp=1,dp=8,ep=8,zero=1");
  ASSERT_EQ(l.buffers.size(), 1u);
  EXPECT_EQ(l.buffers[0].size, kDense);
  ASSERT_EQ(l.expert_buffers.size(), 8u);
  for (std::int64_t e = 0; e < 8; ++e) {
    const FlatBuffer& b = l.expert_buffer(0, e);
    EXPECT_EQ(b.size, kExpertAllLayers);
    EXPECT_EQ(b.params.size(), 96u);
    const std::string prefix = "model.layers.31.block_sparse_moe.experts." + std::to_string(e);
    EXPECT_EQ(b.of(index_of(l, prefix + ".w2.weight")).begin, 0);
    EXPECT_EQ(b.of(index_of(l, prefix + ".w1.weight")).begin, 2 * kExpertMatrix);
    EXPECT_EQ(&l.buffer_of(index_of(l, prefix + ".w1.weight"), 0), &b);
  }
  // Expert TP unlike TP keeps them apart without EP: one expert buffer per stage.
  const LayoutShards etp = shards("tp=2,pp=2,dp=4,etp=1,zero=1");
  EXPECT_EQ(etp.expert_buffers.size(), 2u);
  EXPECT_EQ(etp.expert_buffers[0].size, 8 * kExpertAllLayers / 2);
}

// EP 8 -> EP 4 at PP 4 on the same 32 GPUs (zero 1): new rank 0 (stage 0, EP rank 0, EDP rank 0
// of 2) holds experts 0 and 1 of layers 0-7, and reads half the weights of each from the old EP
// ranks 0 and 1. Its share of the new expert buffer (experts 0 and 1, layers 7 down to 0) is the
// first half: layers 7 to 4 of both experts, which old EP ranks 0 and 1 own whole (EDP groups of
// one). The change fits an H100; the dp_reshardable format is flagged.
TEST(ReshardExperts, ChangingEpReadsEachExpertFromItsOldRank) {
  const std::string from = "tp=1,pp=4,dp=8,ep=8,zero=1", to = "tp=1,pp=4,dp=8,ep=4,zero=1";
  const ConversionPlan p = convert(from, to);
  const RankConversion& r0 = p.ranks[0];
  EXPECT_EQ(r0.ep, 0);
  EXPECT_EQ(r0.expert_data_shard, 0);
  EXPECT_EQ(p.ranks[4].ep, 0);
  EXPECT_EQ(p.ranks[4].expert_data_shard, 1);
  const double weights = 8.0 * 3 * kExpertMatrix * 2 / 2;
  const double optimizer = 4.0 * 3 * kExpertMatrix * 12;
  for (const char* ep : {"ep0", "ep1"}) {
    EXPECT_DOUBLE_EQ(r0.reads.at(std::string("model pp0 ") + ep + " etp0"), weights) << ep;
    EXPECT_DOUBLE_EQ(r0.reads.at(std::string("optim pp0 ") + ep + " etp0 edp0"), optimizer) << ep;
  }
  for (const char* other :
       {"model pp0 ep2 etp0", "optim pp0 ep2 etp0 edp0", "model pp1 ep0 etp0"}) {
    EXPECT_EQ(r0.reads.count(other), 0u) << other;
  }
  // Every tensor read once by the whole cluster, both ways.
  EXPECT_NEAR(p.read_bytes, p.checkpoint_bytes, 1.0);
  const ConversionPlan back = convert(to, from);
  EXPECT_NEAR(back.read_bytes, back.checkpoint_bytes, 1.0);
  const ReshardResult r =
      reshard(mixtral(), test::catalog_platform("h100-sxm-ndr"), test::reshard_layout(from),
              test::reshard_layout(to), std::nullopt);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].id, "optimizer-not-reshardable");
  EXPECT_NE(r.diagnostics[0].message.find("resumes only at the same TP, PP, EP and expert TP"),
            std::string::npos);
  EXPECT_NE(reshard_text(r).find("routed experts (8 a layer): from ep 8 (1 expert a rank: expert "
                                 "e on EP rank e / 1), each split over expert TP 1; to ep 4 (2 "
                                 "experts a rank: expert e on EP rank e / 2), each split over "
                                 "expert TP 1\n"),
            std::string::npos);
}

// EP 8 -> no EP: every rank holds every expert, reads an eighth of each one's weights from its old
// EP rank's file; the whole checkpoint is read once.
TEST(ReshardExperts, DroppingEpGathersEveryExpert) {
  const ConversionPlan p = convert("tp=1,pp=1,dp=8,ep=8,zero=1", "tp=1,pp=1,dp=8,zero=1");
  for (const auto& r : p.ranks) {
    for (std::int64_t e = 0; e < 8; ++e) {
      EXPECT_DOUBLE_EQ(r.reads.at("model pp0 ep" + std::to_string(e) + " etp0"),
                       static_cast<double>(kExpertAllLayers) * 2 / 8);
    }
  }
  EXPECT_NEAR(p.read_bytes, p.checkpoint_bytes, 1.0);
}

// Without a distributed optimizer (zero 0) at EP 4 and DP 8, an expert's weights and optimizer
// state (14 bytes an element) are shared by its EDP group of 2: each rank reads half of its two
// experts' and receives the other half.
TEST(ReshardExperts, AnExpertsCopyIsExchangedOverItsEdpGroup) {
  const ConversionPlan p = convert("tp=1,pp=1,dp=8,ep=4", "tp=1,pp=1,dp=8,ep=4");
  const double experts = 2.0 * kExpertAllLayers * 14 / 2;
  const double dense = static_cast<double>(kDense) * 14 * 7 / 8;
  for (const auto& r : p.ranks) {
    EXPECT_DOUBLE_EQ(r.expert_exchanged_bytes, experts);
    EXPECT_DOUBLE_EQ(r.exchanged_bytes, experts + dense);
  }
}

// The new layout's memory check shards the experts' optimizer state over their EDP group: at EP 8
// on one node (an EDP group of one) each GPU keeps its expert's master weights and moments whole,
// 5,637,144,576 x 18 bytes: more than an H100 holds; at PP 4 a quarter of that fits. Without EP
// at PP 4, the last stage's 8 experts x 8 layers (11,274,289,152 elements, 7.5 bytes each with
// the state over dp 8) and 466,948,096 others do not fit; the fix offered is EP 2 on the same
// GPUs, half the experts with their state over 4 ranks (9 bytes an element).
TEST(ReshardExperts, MemoryShardsExpertStateOverItsEdpGroup) {
  const Model m = mixtral();
  const auto oom = [&](const std::string& to) {
    const ReshardResult r =
        reshard(m, test::catalog_platform("h100-sxm-ndr"), test::reshard_layout(to),
                test::reshard_layout(to), std::nullopt);
    for (const auto& d : r.diagnostics) {
      if (d.id == "oom") return d;
    }
    return Diagnostic{};
  };
  EXPECT_NE(oom("tp=1,pp=1,dp=8,ep=8,zero=1").message.find("holds 7,242,780,672 parameters"),
            std::string::npos);
  EXPECT_EQ(oom("tp=1,pp=4,dp=8,ep=8,zero=1").id, "");
  const Diagnostic no_ep = oom("tp=1,pp=4,dp=8,zero=1");
  EXPECT_EQ(no_ep.stage, 3);
  EXPECT_NE(no_ep.message.find("holds 11,741,237,248 parameters"), std::string::npos);
  EXPECT_EQ(no_ep.fix.rfind("ep=2 in --to (the same GPUs, 4 experts a rank) brings it to ", 0), 0u);
  EXPECT_EQ(oom("tp=1,pp=4,dp=8,ep=2,zero=1").id, "");
}

}  // namespace
}  // namespace trainsim
