// Packed documents (--packed-document-tokens): fine-tuning's sequences packed with short
// documents, each token attending within its own, as Transformer Engine's THD attention runs
// them. Their rules, the attention's shape and FLOPs in closed form, and nothing else moved.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <variant>

#include "sim/cost/stage_cost.hpp"
#include "sim/platform/kernel_shape.hpp"
#include "tests/support/pass_kernels.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// Llama 3.1 8B on one GPU, sequences of 4096 tokens.
Plan packed_plan(std::int64_t document) {
  Plan p;
  p.dp = 1;
  p.mbs = 2;
  p.gbs = 2;
  p.seq_len = 4096;
  p.packed_document_tokens = document;
  return p;
}

StageCost stage(const Plan& p) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  return compute_costs(m, pf, p, test::uniform_partition(m, 1)).stages[0];
}

// The attention shape of the kernel `name` of `pass` (a copy: stage() returns temporaries).
AttentionShape attention_of(const PassCost& pass, const std::string& name) {
  return std::get<AttentionShape>(test::pass_kernel(pass, name).shape);
}

TEST(PackedDocuments, RulesOneLineEach) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p = packed_plan(256);
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  p.attention_backend = AttentionBackend::kFlashAttn2;
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  p.packed_document_tokens = 4097;
  EXPECT_EQ(test::plan_error(p, m),
            "--packed-document-tokens: must be at most --seq-len 4096 (the documents are packed "
            "into each sequence), got 4097");
  p = packed_plan(256);
  p.cp = 2;
  EXPECT_EQ(test::plan_error(p, m), "(valid)");  // the p2p ring
  for (CpComm comm : {CpComm::kA2A, CpComm::kAllGather}) {
    p.cp_comm = comm;
    EXPECT_EQ(test::plan_error(p, m),
              "--packed-document-tokens: packed documents under context parallelism are "
              "modelled on the p2p ring only (Transformer Engine's ring over each document's 2 "
              "x cp chunks): use --cp-comm-type p2p or --cp 1");
  }
  p.packed_document_tokens = 4096;  // one document a sequence: no packing, any CP
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  p = packed_plan(256);
  p.attention_backend = AttentionBackend::kUnfused;
  EXPECT_EQ(test::plan_error(p, m),
            "--packed-document-tokens: packed documents need Transformer Engine's fused "
            "attention (Megatron-Core's unfused attention takes no packed sequences): use "
            "--attention-backend flash or flash-attn2");
}

// Documents of 256 tokens: one launch over mbs x 16 of them, each causal over its own 256
// tokens, 4 b h s^2 d / 2 FLOPs a document forward (2.5 times that backward): 1/16 of the whole
// sequence's causal attention. Every other kernel is the unpacked run's.
TEST(PackedDocuments, AttentionRunsOverEachDocument) {
  const StageCost whole = stage(packed_plan(0));
  const StageCost packed = stage(packed_plan(256));
  const auto& fwd = test::pass_kernel(packed.forward, "decoder.attention");
  const auto& a = std::get<AttentionShape>(fwd.shape);
  EXPECT_EQ(a.batch, 2 * 16);
  EXPECT_EQ(a.seq, 256);
  EXPECT_TRUE(a.causal);
  EXPECT_EQ(a.heads, 32);
  EXPECT_EQ(a.kv_heads, 8);
  EXPECT_EQ(fwd.count, 32);  // once a layer
  const double per_document = 4.0 * 256 * 256 * 32 * 128 / 2;
  EXPECT_DOUBLE_EQ(fwd.flops, 2 * 16 * per_document);
  EXPECT_DOUBLE_EQ(test::pass_kernel(packed.backward, "decoder.attention.grad").flops,
                   2.5 * 2 * 16 * per_document);
  EXPECT_DOUBLE_EQ(test::launched_flops(whole.forward, "decoder.attention"),
                   16 * test::launched_flops(packed.forward, "decoder.attention"));
  for (const auto& [w, p] :
       {std::pair{&whole.forward, &packed.forward}, std::pair{&whole.backward, &packed.backward}}) {
    ASSERT_EQ(w->kernels.size(), p->kernels.size());
    for (std::size_t i = 0; i < w->kernels.size(); ++i) {
      const auto &x = w->kernels[i], &y = p->kernels[i];
      EXPECT_EQ(x.name, y.name);
      if (x.name.starts_with("decoder.attention")) continue;
      EXPECT_DOUBLE_EQ(x.flops, y.flops) << x.name;
      EXPECT_DOUBLE_EQ(x.time.seconds, y.time.seconds) << x.name;
    }
  }
  EXPECT_LT(packed.forward.seconds, whole.forward.seconds);
}

// Documents that do not divide the sequence: the rounded count of them (4096 / 200 = 20.48,
// 20 documents of 200); a document of the sequence's length is no packing at all.
TEST(PackedDocuments, UnevenDocumentsAndWholeSequence) {
  const StageCost uneven = stage(packed_plan(200));
  const AttentionShape a = attention_of(uneven.forward, "decoder.attention");
  EXPECT_EQ(a.batch, 2 * 20);
  EXPECT_EQ(a.seq, 200);
  const StageCost whole = stage(packed_plan(0));
  const StageCost one = stage(packed_plan(4096));
  EXPECT_DOUBLE_EQ(one.forward.seconds, whole.forward.seconds);
  EXPECT_DOUBLE_EQ(one.backward.seconds, whole.backward.seconds);
}

// Under the CP ring (cp 2) each document is cut in 4 chunks of c = 64 tokens, each rank holding
// two of every document: a step on its own chunks, causal over 2c = 128 tokens of each of the
// mbs x 16 documents, and one step on the other rank's, c queries by 2c keys (half the heads of
// a full 128-token block). Together 1/cp of the documents' causal work; a 200-token document is
// padded to 4 chunks of 50.
TEST(PackedDocuments, TheCpRingRunsOverEachDocumentsChunks) {
  Plan p = packed_plan(256);
  p.cp = 2;
  const StageCost ring = stage(p);
  const AttentionShape a = attention_of(ring.forward, "decoder.attention");
  EXPECT_EQ(a.batch, 2 * 16);
  EXPECT_EQ(a.seq, 128);
  EXPECT_TRUE(a.causal);
  const AttentionShape b = attention_of(ring.forward, "decoder.attention.ring");
  EXPECT_EQ(b.batch, 2 * 16);
  EXPECT_EQ(b.seq, 128);
  EXPECT_FALSE(b.causal);
  EXPECT_EQ(b.heads, 16);
  const double per_document = 4.0 * 256 * 256 * 32 * 128 / 2;  // causal, whole document
  EXPECT_DOUBLE_EQ(test::launched_flops(ring.forward, "decoder.attention"),
                   32 * 2 * 16 * per_document / 2);  // 32 layers, 1/cp of it
  p.packed_document_tokens = 200;
  EXPECT_EQ(attention_of(stage(p).forward, "decoder.attention").seq,
            2 * 50);  // 200 tokens are 4 chunks of 50 already
  p.packed_document_tokens = 201;
  EXPECT_EQ(attention_of(stage(p).forward, "decoder.attention").seq, 2 * 51);  // padded to 4 x 51
}

// Selective recomputation re-runs the packed attention, not the whole sequence's.
TEST(PackedDocuments, RecomputationRepeatsThePackedAttention) {
  Plan p = packed_plan(256);
  p.recompute = Recompute::kSelective;
  const StageCost packed = stage(p);
  EXPECT_DOUBLE_EQ(test::launched_flops(packed.recompute, "decoder.attention"),
                   test::launched_flops(packed.forward, "decoder.attention"));
}

}  // namespace
}  // namespace trainsim
