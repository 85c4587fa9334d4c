// trainsim reshard: layouts, tensors, shards, flat buffers and the conversion plan, each against
// numbers worked out by hand from the frameworks' rules.
#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/model/params.hpp"
#include "sim/reshard/conversion.hpp"
#include "sim/reshard/layout_spec.hpp"
#include "sim/reshard/shards.hpp"
#include "tests/support/reshard_layouts.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Model tiny() {
  return test::seed_model("nanotron-108-tiny");
}

Plan layout(const std::string& text, Framework f = Framework::kMegatron) {
  return test::reshard_layout(text, f);
}

LayoutShards shards(const Model& m, const Plan& p) {
  return test::reshard_shards(m, p);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ReshardLayout, ParsesKeysAndNamesTheFlagAtFault) {
  const Plan p = layout("tp=2,pp=4,dp=8,zero=1,vp=2");
  EXPECT_EQ(p.tp, 2);
  EXPECT_EQ(p.pp, 4);
  EXPECT_EQ(p.dp, 8);
  EXPECT_EQ(p.zero, 1);
  EXPECT_EQ(p.vp, 2);
  EXPECT_EQ(p.schedule, ScheduleKind::kInterleaved);
  EXPECT_EQ(layout_text(p), "tp 2, pp 4 x vp 2, dp 8, zero 1");
  EXPECT_EQ(error_of([] { layout("tp=2,tp=4"); }), "--from: sets 'tp' twice");
  EXPECT_EQ(error_of([] { layout("tp=two"); }),
            "--from tp: must be an integer in [1, 1048576], got 'two'");
  EXPECT_EQ(error_of([] { layout("zero=4"); }),
            "--from zero: must be an integer in [0, 3], got '4'");
  EXPECT_EQ(error_of([] { layout("tq=2"); }).rfind("--from: unknown key 'tq' (keys: tp, pp,", 0),
            0u);
  EXPECT_EQ(
      error_of([] { layout("tp2"); }),
      "--from: expected key=value items separated by commas (e.g. tp=2,pp=1,dp=4), got 'tp2'");
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform h = test::catalog_platform("h100-sxm-ndr");
  EXPECT_EQ(error_of([&] { validate_layout(layout("tp=3"), m, h, "--to"); }),
            "--to tp: must divide the attention heads (32), got 3");
  EXPECT_EQ(error_of([&] { validate_layout(layout("cp=3"), m, h, "--to"); }), "(no error)");
  const Model mixtral = test::catalog_model("mixtral-8x7b");
  EXPECT_EQ(error_of([&] { validate_layout(layout("dp=8,ep=3"), mixtral, h, "--to"); }),
            "--to ep: must divide the number of experts (8), got 3");
  EXPECT_EQ(error_of([&] { validate_layout(layout("tp=2,dp=8,ep=8,etp=1"), mixtral, h, "--to"); }),
            "(no error)");
  EXPECT_EQ(layout_text(layout("tp=2,dp=8,ep=8,etp=1")), "tp 2, pp 1, dp 8, ep 8, etp 1");
  EXPECT_EQ(error_of([] { layout("etp=0"); }),
            "--from etp: must be an integer in [1, 1048576], got '0'");
}

// Column-parallel weights split along dim 0, row-parallel along dim 1, norms replicated; the
// vocabulary padded by the framework's rule (nanotron: a multiple of tp).
TEST(ReshardShards, SplitDimensionAndPaddingPerLayerKind) {
  const LayoutShards l = shards(tiny(), layout("tp=2,pp=1,dp=1", Framework::kNanotron));
  EXPECT_EQ(l.padded_vocab, 50278);
  const auto& embed = l.placed[0];
  EXPECT_EQ(l.params[0].name, "model.embed_tokens.weight");
  EXPECT_EQ(embed.shards[0].shape, (std::vector<std::int64_t>{25139, 16}));
  EXPECT_EQ(embed.shards[0].split.begin, 0);
  EXPECT_EQ(embed.shards[1].split.begin, 25139);
  EXPECT_EQ(embed.shards[1].split.end, 50278);
  EXPECT_EQ(embed.shards[0].real, 25139);
  EXPECT_EQ(embed.shards[1].real, 25138);  // and one padding row
  for (std::size_t i = 0; i < l.params.size(); ++i) {
    const auto& name = l.params[i].name;
    const auto& shape = l.placed[i].shards[1].shape;
    if (name == "model.layers.1.self_attn.q_proj.weight") {
      EXPECT_EQ(shape, (std::vector<std::int64_t>{8, 16}));
    }
    if (name == "model.layers.1.self_attn.o_proj.weight") {
      EXPECT_EQ(shape, (std::vector<std::int64_t>{16, 8}));
    }
    if (name == "model.layers.1.mlp.down_proj.weight") {
      EXPECT_EQ(shape, (std::vector<std::int64_t>{16, 32}));
    }
    if (name == "model.layers.1.input_layernorm.weight") {
      EXPECT_EQ(shape, (std::vector<std::int64_t>{16}));
    }
  }
  // Megatron pads to 128 x tp, ColossalAI to 64 x tp.
  const Model m70 = test::catalog_model("llama3.1-70b");
  EXPECT_EQ(shards(m70, layout("tp=8")).padded_vocab, 129024);
  EXPECT_EQ(shards(m70, layout("tp=8", Framework::kColossalAI)).padded_vocab, 128512);
}

// Stages from the framework's partition rule; a tied embedding is held by the first and last.
TEST(ReshardShards, StagesFromThePartitionRule) {
  const Model m = test::catalog_model("llama3.1-8b");
  const LayoutShards l = shards(m, layout("tp=1,pp=4,dp=1"));
  for (std::size_t i = 0; i < l.params.size(); ++i) {
    const auto& spec = l.params[i];
    const std::int64_t want = spec.layer >= 0                       ? spec.layer / 8
                              : spec.block == BlockKind::kEmbedding ? 0
                                                                    : 3;
    EXPECT_EQ(l.placed[i].stages, std::vector<std::int64_t>{want}) << spec.name;
  }
  const LayoutShards t = shards(tiny(), layout("tp=1,pp=2,dp=1"));
  EXPECT_EQ(t.placed[0].stages, (std::vector<std::int64_t>{0, 1}));
}

// Megatron's distributed-optimizer buffer (one bucket): parameters in reverse order, each
// starting at a multiple of 64 elements, the end padded to lcm(dp, 128). Worked by hand for the
// tiny model (tied, vocabulary 50,277 padded to 50,304 at tp 1).
TEST(ReshardShards, MegatronFlatBufferOffsets) {
  const LayoutShards l = shards(tiny(), layout("tp=1,pp=1,dp=2,zero=1"));
  ASSERT_EQ(l.buffers.size(), 1u);
  const FlatBuffer& b = l.buffers[0];
  const auto at = [&](const std::string& name) {
    for (std::size_t i = 0; i < l.params.size(); ++i) {
      if (l.params[i].name == name) return b.of(i);
    }
    return Interval{-1, -1};
  };
  EXPECT_EQ(at("model.norm.weight").begin, 0);
  EXPECT_EQ(at("model.layers.1.mlp.down_proj.weight").begin, 64);
  EXPECT_EQ(at("model.layers.1.self_attn.o_proj.weight").begin, 3200);
  EXPECT_EQ(at("model.layers.0.self_attn.q_proj.weight").end, 8448);
  EXPECT_EQ(at("model.embed_tokens.weight").begin, 8512);
  EXPECT_EQ(at("model.embed_tokens.weight").end, 8512 + 50304 * 16);
  EXPECT_EQ(b.size, 813440);  // 813,376 rounded up to a multiple of 128
  EXPECT_EQ(b.owned(1, 2).begin, 406720);
  // Other frameworks: registration order, no alignment, padded to a multiple of dp.
  const LayoutShards n = shards(tiny(), layout("tp=1,pp=1,dp=2,zero=1", Framework::kNanotron));
  EXPECT_EQ(n.buffers[0].of(0).begin, 0);
  EXPECT_EQ(n.buffers[0].size, total_params(tiny()));  // even: no padding
}

// A clean change reads the whole checkpoint exactly once: weights (2 bytes) and optimizer state
// (12 bytes) of every element, split over the ranks that share them.
TEST(ReshardConversion, CleanChangeReadsTheCheckpointOnce) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform h = test::catalog_platform("h100-sxm-ndr");
  const LayoutShards from = shards(m, layout("tp=2,pp=1,dp=4"));
  const LayoutShards to = shards(m, layout("tp=4,pp=1,dp=2"));
  const ConversionPlan p = plan_conversion(from, to, h);
  EXPECT_DOUBLE_EQ(p.checkpoint_bytes, 8'030'261'248.0 * 14);
  EXPECT_DOUBLE_EQ(p.read_bytes, p.checkpoint_bytes);
  // Saved at tp 4 the vocabulary has 256 more rows in each of the two tables.
  EXPECT_DOUBLE_EQ(p.new_checkpoint_bytes, (8'030'261'248.0 + 2 * 256 * 4096) * 14);
  EXPECT_NEAR(p.written_bytes, p.new_checkpoint_bytes, 1e-3 * 14);
  ASSERT_EQ(p.ranks.size(), 8u);
  // One node reads it all at 40 GB/s.
  EXPECT_DOUBLE_EQ(p.read_s, p.read_bytes / 40e9);
  // Rank 0 (tp 0, dp 0) reads half its tp-4 shard of rows 0-32127 of the embedding from the old
  // tp 0 file: 32128 x 4096 x 2 bytes / 2.
  EXPECT_GT(p.ranks[0].reads.count("model pp0 tp0"), 0u);
  EXPECT_EQ(p.ranks[0].reads.count("model pp0 tp1"), 0u);
  // A distributed optimizer: each new rank reads its own share of the state.
  const LayoutShards zf = shards(m, layout("tp=2,pp=1,dp=4,zero=1"));
  const LayoutShards zt = shards(m, layout("tp=2,pp=1,dp=2,zero=1"));
  const ConversionPlan z = plan_conversion(zf, zt, h);
  // Every element once, but a replicated tensor (the norms: 32 x 2 x 4096 + 4096 elements) has an
  // optimizer-state owner on each of the 2 TP ranks, so its state is read twice.
  EXPECT_NEAR(z.read_bytes, z.checkpoint_bytes + 266240.0 * 12, 1.0);
  EXPECT_GT(z.ranks[0].reads.count("optim pp0 tp0 dp1"), 0u);  // old dp 0 and 1 -> new dp 0
  EXPECT_EQ(z.ranks[0].reads.count("optim pp0 tp0 dp2"), 0u);
}

// Context-parallel ranks hold the same weights, and the distributed optimizer shards over dp x cp
// (Megatron-Core's data-parallel group with CP), each rank owning the share at its place in that
// group. From dp 4 to cp 2 x dp 2 on the same 4 GPUs the buffer and its shares stay: rank r (cp
// r % 2, dp r / 2) reads old share r alone and a quarter of the weights; on 8 GPUs (cp 2 x dp 4)
// the buffer is padded to lcm(8, 128) and each share is about half an old one.
TEST(ReshardConversion, ContextParallelismShardsTheOptimizerOverDpTimesCp) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform h = test::catalog_platform("h100-sxm-ndr");
  const LayoutShards from = shards(m, layout("tp=1,pp=1,dp=4,zero=1"));
  const LayoutShards to = shards(m, layout("tp=1,pp=1,cp=2,dp=2,zero=1"));
  EXPECT_EQ(from.buffers[0].size, to.buffers[0].size);
  const ConversionPlan p = plan_conversion(from, to, h);
  ASSERT_EQ(p.ranks.size(), 4u);
  const double weights = 8'030'261'248.0 * 2;
  for (std::int64_t r = 0; r < 4; ++r) {
    const RankConversion& rc = p.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(rc.cp, r % 2);
    EXPECT_EQ(rc.dp, r / 2);
    EXPECT_EQ(rc.data_shard, r);
    ASSERT_EQ(rc.reads.size(), 2u) << r;  // the weights' file and its own optimizer share
    EXPECT_NEAR(rc.reads.at("model pp0 tp0"), weights / 4, 1.0);
    const FlatBuffer& b = to.buffers[0];
    EXPECT_GT(rc.reads.count("optim pp0 tp0 dp" + std::to_string(r)), 0u);
    EXPECT_LE(rc.reads.at("optim pp0 tp0 dp" + std::to_string(r)), b.size / 4 * 12.0);
  }
  EXPECT_NEAR(p.read_bytes, p.checkpoint_bytes, 1.0);
  const LayoutShards wide = shards(m, layout("tp=1,pp=1,cp=2,dp=4,zero=1"));
  EXPECT_EQ(wide.buffers[0].size % 128, 0);
  EXPECT_EQ(wide.buffers[0].size, from.buffers[0].size);  // lcm(8, 128) = lcm(4, 128)
  const ConversionPlan q = plan_conversion(from, wide, h);
  EXPECT_NEAR(q.read_bytes, q.checkpoint_bytes, 1.0);
  // Rank 3 (cp 1, dp 1) owns share 3 of 8: the second half of old share 1.
  EXPECT_EQ(q.ranks[3].data_shard, 3);
  EXPECT_GT(q.ranks[3].reads.count("optim pp0 tp0 dp1"), 0u);
  EXPECT_EQ(q.ranks[3].reads.count("optim pp0 tp0 dp0"), 0u);
}

}  // namespace
}  // namespace trainsim
