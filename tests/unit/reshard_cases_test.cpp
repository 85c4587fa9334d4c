// trainsim reshard on the failures it was built for: nanotron #106 (a TP 2 checkpoint resumed at
// TP 1), ColossalAI #6108 (one TP shard of Llama 3.1 70B's embedding saved as the whole), a clean
// Megatron change, and the other checks.
#include <gtest/gtest.h>

#include "sim/reshard/checkpoint.hpp"
#include "sim/reshard/checks.hpp"
#include "sim/reshard/layout_spec.hpp"
#include "sim/reshard/reshard.hpp"
#include "tests/support/reshard_layouts.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan layout(const std::string& text, Framework f = Framework::kMegatron) {
  return test::reshard_layout(text, f);
}

ReshardResult run(const Model& m, const std::string& from, const std::string& to,
                  Framework f = Framework::kMegatron) {
  return reshard(m, test::catalog_platform("h100-sxm-ndr"), layout(from, f), layout(to, f),
                 std::nullopt);
}

const Diagnostic* find(const ReshardResult& r, const std::string& id) {
  for (const auto& d : r.diagnostics) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

Model tiny() {
  return test::seed_model("nanotron-108-tiny");
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// nanotron #106: hidden 16, 2 layers, 4 heads, vocabulary 50277, tied. At tp 2 nanotron pads to
// 50278 (a multiple of 1 x 2), at tp 1 not at all; the old tp 1 shard is rows 25139-50277, 25139
// rows, but the buffer of the new shape [50277, 16] holds 25138 from row 25139 on.
TEST(ReshardCases, Nanotron106) {
  const ReshardResult r = run(tiny(), "tp=2,pp=1,dp=1", "tp=1,pp=1,dp=2", Framework::kNanotron);
  EXPECT_EQ(r.from.padded_vocab, 50278);
  EXPECT_EQ(r.to.padded_vocab, 50277);
  const Diagnostic* d = find(r, "vocab-padding-mismatch");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_TRUE(r.has_errors());
  EXPECT_TRUE(contains(d->message,
                       "padded to 50,278 rows at tp 2 (a multiple of 1 x 2) and to "
                       "50,277 at tp 1"))
      << d->message;
  EXPECT_TRUE(contains(d->message,
                       "rows 25139-50277 (25139 rows: 25138 of the vocabulary and 1 "
                       "of padding)"))
      << d->message;
  EXPECT_TRUE(contains(d->message, "25139 vs 25138 rows")) << d->message;
  EXPECT_TRUE(contains(d->fix, "vocab-divisible-by=2 in --to")) << d->fix;
  EXPECT_TRUE(contains(d->fix, "lcm(2, 1) = 2, i.e. 50,278 rows (1 of padding)")) << d->fix;
  const Diagnostic* rows = find(r, "padding-rows");
  ASSERT_NE(rows, nullptr);
  EXPECT_TRUE(contains(
      rows->message, "1 padding row (row 50277) per embedding table of the checkpoint is dropped"))
      << rows->message;
  // The fix applied: the new run pads as the checkpoint did, and nothing is left to report.
  const ReshardResult fixed =
      run(tiny(), "tp=2,pp=1,dp=1", "tp=1,pp=1,dp=2,vocab-divisible-by=2", Framework::kNanotron);
  EXPECT_EQ(fixed.to.padded_vocab, 50278);
  EXPECT_TRUE(fixed.diagnostics.empty());
}

// The other way round (tp 1 to tp 2) nanotron's weight loader fails instead: the checkpoint's
// [50277, 16] buffer cannot give the new last shard its 25139 rows.
TEST(ReshardCases, NanotronGrowingPadding) {
  const ReshardResult r = run(tiny(), "tp=1,pp=1,dp=2", "tp=2,pp=1,dp=1", Framework::kNanotron);
  const Diagnostic* d = find(r, "vocab-padding-mismatch");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_TRUE(contains(d->message, "serialize/weights.py")) << d->message;
  EXPECT_TRUE(contains(d->message, "25139 vs 25138 rows")) << d->message;
}

// ColossalAI #6108: Llama 3.1 70B at tp 8 pads 128256 to 128512 (64 x 8); a save that writes one
// shard gives [16064, 8192] for the embedding.
TEST(ReshardCases, ColossalAI6108) {
  const Model m = test::catalog_model("llama3.1-70b");
  const ReshardResult r = run(m, "tp=8,pp=4,dp=1", "tp=8,pp=4,dp=1", Framework::kColossalAI);
  EXPECT_EQ(r.from.padded_vocab, 128512);
  EXPECT_EQ(r.from.placed[0].shards[0].shape, (std::vector<std::int64_t>{16064, 8192}));
  EXPECT_TRUE(r.diagnostics.empty());
  CheckpointListing ck;
  ck.tensors.push_back({"model.embed_tokens.weight", "BF16", {16064, 8192}, 0, "a.safetensors"});
  auto ds = compare_checkpoint(ck, r.from);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].id, "saved-shard-not-tensor");
  EXPECT_EQ(ds[0].severity, Severity::kError);
  EXPECT_TRUE(contains(ds[0].message,
                       "is [16064, 8192]: one tensor-parallel shard, not the tensor: "
                       "16064 x tp 8 = 128512 padded rows, the model's is "
                       "[128256, 8192]"))
      << ds[0].message;
  EXPECT_TRUE(contains(ds[0].fix, "[128256, 8192], the 8 shards concatenated along dim 0"));
  // The padded whole is a warning; the model's shape is what a save should write.
  ck.tensors[0].shape = {128512, 8192};
  ds = compare_checkpoint(ck, r.from);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].id, "saved-with-padding");
  ck.tensors[0].shape = {128256, 8192};
  ds = compare_checkpoint(ck, r.from);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].id, "checkpoint-missing-tensors");  // only the embedding was "saved"
}

// GPT-OSS's Hugging Face checkpoint holds a layer's experts in one tensor: saved whole it
// accounts for all 128 experts' slices; saved with one EP rank's 16 experts, or one expert-TP
// shard of each, it is the expert analogue of ColossalAI #6108.
TEST(ReshardCases, FusedExpertsSavedWholeOrByOneRank) {
  const Model m = test::catalog_model("gpt-oss-120b");
  const ReshardResult r = run(m, "tp=2,pp=4,dp=8,ep=8", "tp=2,pp=4,dp=8,ep=8");
  CheckpointListing ck;
  const std::string name = "model.layers.0.mlp.experts.gate_up_proj";
  ck.tensors.push_back({name, "BF16", {128, 2880, 5760}, 0, "a.safetensors"});
  auto ds = compare_checkpoint(ck, r.from);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].id, "checkpoint-missing-tensors");
  const std::int64_t tensors = static_cast<std::int64_t>(r.from.params.size());
  EXPECT_TRUE(contains(ds[0].message, std::to_string(tensors - 128) + " of the model's " +
                                          std::to_string(tensors) + " tensors"))
      << ds[0].message;
  ck.tensors[0].shape = {16, 2880, 5760};
  ds = compare_checkpoint(ck, r.from);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].id, "saved-experts-of-one-rank");
  EXPECT_EQ(ds[0].severity, Severity::kError);
  EXPECT_TRUE(contains(ds[0].message,
                       "is [16, 2880, 5760]: 16 of the layer's 128 experts, one expert-parallel "
                       "rank's at ep 8, not the tensor [128, 2880, 5760]"))
      << ds[0].message;
  EXPECT_TRUE(contains(ds[0].fix,
                       "[128, 2880, 5760], the 8 ranks' experts concatenated along "
                       "dim 0"))
      << ds[0].fix;
  // Expert TP 2 splits the ffn dimension, dim 2 of the saved tensor.
  ck.tensors[0].shape = {128, 2880, 2880};
  ds = compare_checkpoint(ck, r.from);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].id, "saved-shard-not-tensor");
  EXPECT_TRUE(contains(ds[0].message, "2880 x tp 2 = 5760 rows, the model's is [128, 2880, 5760]"))
      << ds[0].message;
  EXPECT_TRUE(contains(ds[0].fix, "the 2 shards concatenated along dim 2")) << ds[0].fix;
  ck.tensors[0].shape = {128, 2880, 5000};
  ds = compare_checkpoint(ck, r.from);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].id, "saved-shape-mismatch");
  // OpenAI's release: the experts in MXFP4, [out, in] per expert, 32 values to a block of 16
  // bytes with one scale each: the same 128 slices.
  ck.tensors = {{name + "_blocks", "U8", {128, 5760, 90, 16}, 0, "a.safetensors"},
                {name + "_scales", "U8", {128, 5760, 90}, 0, "a.safetensors"}};
  ds = compare_checkpoint(ck, r.from);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].id, "checkpoint-missing-tensors");
  EXPECT_TRUE(contains(ds[0].message, std::to_string(tensors - 128) + " of the model's"))
      << ds[0].message;
  ck.tensors[0].shape = {128, 2880, 180, 16};  // [in, out]: not how MXFP4 holds them
  ds = compare_checkpoint(ck, r.from);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].id, "saved-shape-mismatch");
  EXPECT_TRUE(contains(ds[0].message,
                       "is [128, 2880, 180, 16], the model's is [128, 5760, 90, "
                       "16] (MXFP4 blocks of 128 experts' [2880, 5760])"))
      << ds[0].message;
}

// llama3.1-8b from tp 2 to tp 4 under Megatron's rules: no error; the padding grows from 0 to 256
// rows, which Megatron loads (allow_shape_mismatch): information only.
TEST(ReshardCases, CleanMegatronChange) {
  const ReshardResult r =
      run(test::catalog_model("llama3.1-8b"), "tp=2,pp=1,dp=4", "tp=4,pp=1,dp=2");
  EXPECT_FALSE(r.has_errors());
  for (const auto& d : r.diagnostics) EXPECT_EQ(d.severity, Severity::kInfo) << d.id;
  EXPECT_DOUBLE_EQ(r.plan.read_bytes, r.plan.checkpoint_bytes);
  EXPECT_DOUBLE_EQ(r.plan.checkpoint_bytes, 8'030'261'248.0 * 14);
}

TEST(ReshardCases, MegatronDistributedOptimizerNeedsTheReshardableFormat) {
  const Model m = test::catalog_model("llama3.1-8b");
  const ReshardResult tp = run(m, "tp=2,pp=1,dp=4,zero=1", "tp=4,pp=1,dp=2,zero=1");
  const Diagnostic* d = find(tp, "optimizer-not-reshardable");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_TRUE(contains(d->fix, "--dist-ckpt-optim-fully-reshardable"));
  // Changing DP alone is what the default format supports.
  EXPECT_EQ(
      find(run(m, "tp=2,pp=1,dp=4,zero=1", "tp=2,pp=1,dp=2,zero=1"), "optimizer-not-reshardable"),
      nullptr);
}

// Megatron's uniform split: pp 2 holds decoders 0-15 | 16-31, pp 4 0-7 | 8-15 | 16-23 | 24-31.
TEST(ReshardCases, StageMoves) {
  const ReshardResult r =
      run(test::catalog_model("llama3.1-8b"), "tp=1,pp=2,dp=4,zero=1", "tp=1,pp=4,dp=2,zero=1");
  const Diagnostic* d = find(r, "stage-change");
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(contains(d->message, "decoder 8-15 (stage 0 -> 1, "));
  EXPECT_TRUE(contains(d->message, "decoder 16-23 (stage 1 -> 2, "));
  EXPECT_TRUE(contains(d->message, "decoder 24-31 (stage 1 -> 3, "));
  EXPECT_TRUE(contains(d->message, "final_norm (stage 1 -> 3, 56.00 KiB)")) << d->message;
  EXPECT_FALSE(contains(d->message, "decoder 0-7"));
}

// 8.03 billion parameters at 18 bytes each do not fit on one 80 GiB GPU; the distributed
// optimizer over 8 replicas brings them to 7.5 bytes each.
TEST(ReshardCases, NewLayoutOutOfMemory) {
  const ReshardResult r =
      run(test::catalog_model("llama3.1-8b"), "tp=8,pp=1,dp=1", "tp=1,pp=1,dp=8");
  const Diagnostic* d = find(r, "oom");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kError);
  EXPECT_TRUE(contains(d->message, "8,030,261,248 parameters")) << d->message;
  EXPECT_TRUE(contains(d->fix, "zero=1 in --to")) << d->fix;
}

}  // namespace
}  // namespace trainsim
