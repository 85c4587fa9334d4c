// FP8 scaling recipes (Megatron-LM's --fp8-recipe) as Transformer Engine runs them: their rules,
// current scaling's amax reads and TP amax all-reduces, and delayed scaling's per-pass reduction
// over the stage, which the others do without.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "sim/cost/stage_cost.hpp"
#include "sim/platform/kernel_shape.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// Llama 3.1 8B, FP8, tp 2 with sequence parallelism, one stage.
Plan fp8_plan(Fp8Recipe recipe, bool sp = true) {
  Plan p;
  p.tp = 2;
  p.sp = sp;
  p.dp = 1;
  p.gbs = 1;
  p.seq_len = 4096;
  p.precision = Precision::kFP8;
  p.fp8_recipe = recipe;
  return p;
}

StageCost stage(const Plan& p) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  return compute_costs(m, pf, p, test::uniform_partition(m, 1)).stages[0];
}

TEST(Fp8Recipe, RulesOneLineEach) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p = fp8_plan(Fp8Recipe::kTensorwise);
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  p.fp8_recipe = Fp8Recipe::kBlockwise;
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  p.precision = Precision::kBF16;
  EXPECT_EQ(test::plan_error(p, m),
            "--fp8-recipe: scales FP8 tensors, so it needs --precision fp8 (got bf16)");
  p = fp8_plan(Fp8Recipe::kMxfp8);
  EXPECT_EQ(test::plan_error(p, m),
            "--fp8-recipe: mxfp8 runs on Blackwell's tensor cores (compute capability 10); "
            "NVIDIA H100 SXM5 80GB has none: use delayed, tensorwise or blockwise");
}

// Current scaling: before each cast (the forward's inputs, the backward's output gradients) one
// read of the tensor for its amax, 2 bytes an element, as many as the casts and of the same
// shapes; with sequence parallelism each of a layer's two gathered inputs (QKV's and the MLP's)
// has its amax all-reduced over TP in the forward, and each of its two gathered output
// gradients (the output projection's and the MLP's) in the backward: 64 calls of 4 bytes over
// 32 layers. The pass's kernel time grows by the amax reads' and nothing else.
TEST(Fp8Recipe, CurrentScalingReadsEachCastTensorForItsAmax) {
  const StageCost delayed = stage(fp8_plan(Fp8Recipe::kDelayed));
  const StageCost current = stage(fp8_plan(Fp8Recipe::kTensorwise));
  for (const auto& [d, c] : {std::pair{&delayed.forward, &current.forward},
                             std::pair{&delayed.backward, &current.backward}}) {
    std::int64_t casts = 0, amaxes = 0;
    double amax_seconds = 0;
    for (std::size_t i = 0; i < c->kernels.size(); ++i) {
      const auto& k = c->kernels[i];
      const auto* shape = std::get_if<MemoryShape>(&k.shape);
      if (shape && shape->op == "fp8_cast_transpose") casts += k.count;
      if (!shape || shape->op != "fp8_amax") continue;
      amaxes += k.count;
      amax_seconds += k.time.seconds * static_cast<double>(k.count);
      EXPECT_DOUBLE_EQ(k.bytes, 2.0 * static_cast<double>(shape->rows * shape->cols));
      ASSERT_LT(i + 1, c->kernels.size());
      const auto& cast = std::get<MemoryShape>(c->kernels[i + 1].shape);
      EXPECT_EQ(cast.op, "fp8_cast_transpose") << k.name;
      EXPECT_EQ(cast.rows, shape->rows);
      EXPECT_EQ(cast.cols, shape->cols);
    }
    EXPECT_GT(casts, 0);
    EXPECT_EQ(amaxes, casts);
    EXPECT_NEAR(c->seconds - d->seconds, amax_seconds, 1e-12);
    // Beyond the vocabulary-parallel loss's own TP all-reduces, which both have.
    const CollectiveLoad reduced =
        collective_load(c->collectives, CollectiveKind::kAllReduce, Dim::kTP);
    const CollectiveLoad before =
        collective_load(d->collectives, CollectiveKind::kAllReduce, Dim::kTP);
    EXPECT_EQ(reduced.count - before.count, 32 * 2);
    EXPECT_DOUBLE_EQ(reduced.bytes - before.bytes, 32 * 2 * 4.0);
  }
  // Without sequence parallelism nothing is gathered, and no amax is reduced over TP.
  const StageCost plain = stage(fp8_plan(Fp8Recipe::kTensorwise, false));
  EXPECT_EQ(collective_load(plain.forward.collectives, CollectiveKind::kAllReduce, Dim::kTP).bytes,
            collective_load(stage(fp8_plan(Fp8Recipe::kDelayed, false)).forward.collectives,
                            CollectiveKind::kAllReduce, Dim::kTP)
                .bytes);
}

// Delayed scaling all-reduces the amaxes its GEMMs recorded over the stage's GPUs once a pass;
// current and blockwise scaling compute theirs when they cast and have nothing to reduce there.
// Blockwise scaling's casts and GEMMs are priced as delayed scaling's.
TEST(Fp8Recipe, OnlyDelayedScalingReducesAmaxesOverTheStage) {
  const StageCost delayed = stage(fp8_plan(Fp8Recipe::kDelayed));
  EXPECT_GT(
      collective_load(delayed.forward.collectives, CollectiveKind::kAllReduce, Dim::kStage).count,
      0);
  for (const auto recipe : {Fp8Recipe::kTensorwise, Fp8Recipe::kBlockwise}) {
    const StageCost s = stage(fp8_plan(recipe));
    for (const PassCost* pass : {&s.forward, &s.backward}) {
      EXPECT_EQ(collective_load(pass->collectives, CollectiveKind::kAllReduce, Dim::kStage).count,
                0);
    }
  }
  const StageCost block = stage(fp8_plan(Fp8Recipe::kBlockwise));
  EXPECT_DOUBLE_EQ(block.forward.seconds, delayed.forward.seconds);
  EXPECT_DOUBLE_EQ(block.backward.seconds, delayed.backward.seconds);
}

}  // namespace
}  // namespace trainsim
