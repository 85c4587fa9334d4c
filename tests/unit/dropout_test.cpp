// Dropout as Megatron-LM runs it: on the attention probabilities (--attention-dropout), a pass
// each way over the s x s scores in the unfused backend; on the hidden states
// (--hidden-dropout), the 1-byte mask of each fused bias-dropout-add and of the embedding's
// dropout, and their backward.
#include <gtest/gtest.h>

#include <string>

#include "sim/cost/stage_cost.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// Launches and bytes of a pass's kernels whose name ends in `suffix`, and their time.
struct Named {
  std::int64_t launches = 0;
  double bytes = 0;
  double seconds = 0;
};
Named named(const PassCost& pass, const std::string& suffix) {
  Named n;
  for (const auto& k : pass.kernels) {
    if (!k.name.ends_with(suffix)) continue;
    n.launches += k.count;
    n.bytes += k.bytes * static_cast<double>(k.count);
    n.seconds += k.time.seconds * static_cast<double>(k.count);
  }
  return n;
}

// Llama 3.1 8B at TP 2, micro-batch 2 x 2,048, on a100-sxm-hdr (no kernel database: every
// memory-bound kernel at the roofline), and its costs on one stage.
struct Case {
  Model m = test::catalog_model("llama3.1-8b");
  Platform platform = test::catalog_platform("a100-sxm-hdr");
  Plan p = [] {
    Plan plan;
    plan.tp = 2;
    plan.mbs = 2;
    plan.seq_len = 2048;
    return plan;
  }();
  StageCost costs() const {
    return compute_costs(m, platform, p, test::uniform_partition(m, 1)).stages[0];
  }
};

// --attention-dropout in the unfused backend: per layer and micro-batch, PyTorch's dropout over
// the b a s^2 probabilities, reading them (2 bytes) and writing its output (2) and mask (1); its
// backward reads the gradient (2) and the mask (1) and writes the gradient (2). Both are
// roofline-timed as the softmax is (5 bytes a score element against its 4 and 6), selective
// recomputation re-runs the forward one, and nothing else changes. A fused kernel draws its mask
// inside: flash attention costs the same with dropout as without.
TEST(CostModel, AttentionDropoutIsAPassEachWayOverTheProbabilities) {
  Case c;
  c.p.recompute = Recompute::kSelective;
  const StageCost flash = c.costs();
  c.p.attention_dropout = 0.1;
  const StageCost flash_dropout = c.costs();
  EXPECT_DOUBLE_EQ(flash_dropout.forward.seconds, flash.forward.seconds);
  EXPECT_DOUBLE_EQ(flash_dropout.backward.seconds, flash.backward.seconds);

  c.p.attention_backend = AttentionBackend::kUnfused;
  const StageCost with = c.costs();
  c.p.attention_dropout = 0;
  const StageCost without = c.costs();
  const double layers = 32, b = 2, a = 32.0 / 2, s = 2048, scores = b * a * s * s;
  const Named softmax = named(with.forward, "decoder.attention.softmax");
  const Named softmax_grad = named(with.backward, "decoder.attention.softmax.grad");
  const Named drop = named(with.forward, "decoder.attention.dropout");
  const Named drop_grad = named(with.backward, "decoder.attention.dropout.grad");
  EXPECT_EQ(named(without.forward, "decoder.attention.dropout").launches, 0);
  EXPECT_EQ(drop.launches, 32);
  EXPECT_EQ(drop_grad.launches, 32);
  EXPECT_DOUBLE_EQ(drop.bytes, layers * 5 * scores);
  EXPECT_DOUBLE_EQ(drop_grad.bytes, layers * 5 * scores);
  EXPECT_NEAR(drop.seconds, softmax.seconds * 5 / 4, 1e-9 * drop.seconds);
  EXPECT_NEAR(drop_grad.seconds, softmax_grad.seconds * 5 / 6, 1e-9 * drop_grad.seconds);
  EXPECT_NEAR(with.forward.seconds - without.forward.seconds, drop.seconds, 1e-9);
  EXPECT_NEAR(with.recompute.seconds - without.recompute.seconds, drop.seconds, 1e-9);
  EXPECT_NEAR(with.backward.seconds - without.backward.seconds, drop_grad.seconds, 1e-9);
}

// --hidden-dropout: each decoder layer's two bias-dropout-adds write a 1-byte mask per element
// of the residual stream (its sequence-parallel part: b s / tp tokens), which their backward
// reads beside the gradient (5 bytes); the embedding's output takes a dropout of its own (5
// bytes each way). On a100-sxm-hdr every one of them is roofline-timed, so each pass grows by
// exactly their time; the memory model keeps the masks (tests/unit/memory_test.cpp).
TEST(CostModel, HiddenDropoutIsAMaskPerResidualAddAndTheEmbeddingsDropout) {
  Case c;
  c.p.sp = true;
  const StageCost without = c.costs();
  c.p.hidden_dropout = 0.1;
  const StageCost st = c.costs();
  const double stream = 2.0 * 2048 / 2 * 4096;  // b s / tp tokens x h
  const Named mask = named(st.forward, "decoder.hidden_dropout");
  const Named mask_grad = named(st.backward, "decoder.hidden_dropout.grad");
  EXPECT_EQ(mask.launches, 2 * 32);
  EXPECT_DOUBLE_EQ(mask.bytes, 2 * 32 * stream);
  EXPECT_EQ(mask_grad.launches, 2 * 32);
  EXPECT_DOUBLE_EQ(mask_grad.bytes, 2 * 32 * 5 * stream);
  const Named embedding = named(st.forward, "embedding_dropout");
  const Named embedding_grad = named(st.backward, "embedding_dropout.grad");
  EXPECT_EQ(embedding.launches, 1);
  EXPECT_DOUBLE_EQ(embedding.bytes, 5 * stream);
  EXPECT_DOUBLE_EQ(embedding_grad.bytes, 5 * stream);
  EXPECT_GT(mask.seconds, 0);
  EXPECT_NEAR(st.forward.seconds - without.forward.seconds, mask.seconds + embedding.seconds,
              1e-12);
  EXPECT_NEAR(st.backward.seconds - without.backward.seconds,
              mask_grad.seconds + embedding_grad.seconds, 1e-12);
  EXPECT_DOUBLE_EQ(st.recompute.seconds, 0);
}

}  // namespace
}  // namespace trainsim
