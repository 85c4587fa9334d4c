// Full recomputation of part of the layers (--recompute-num-layers N, Megatron-LM's
// --recompute-method block): the first N decoder layers of each model chunk run their forward
// again and keep only their input, the rest keep their activations, so time and memory lie
// between no recomputation and full recomputation by the share N / L of each chunk's L layers.
#include <gtest/gtest.h>

#include <string>

#include "sim/core/error.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/partition.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan plan_with(Recompute r, std::int64_t layers) {
  Plan p;
  p.tp = 2;
  p.pp = 4;
  p.seq_len = 4096;
  p = recomputing(p, r);
  p.recompute_num_layers = layers;
  return p;
}

// llama3.1-8b over four stages: 8 decoder layers each (the first with the embedding, the last
// with the LM head and loss).
TEST(PartialRecompute, TimeIsTheShareOfEachChunksLayers) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto part = test::uniform_partition(m, 4);
  const CostModel all = compute_costs(m, pf, plan_with(Recompute::kFull, 0), part);
  const CostModel three = compute_costs(m, pf, plan_with(Recompute::kFull, 3), part);
  const CostModel beyond = compute_costs(m, pf, plan_with(Recompute::kFull, 100), part);
  for (std::size_t s = 0; s < 4; ++s) {
    const double full = all.stages[s].recompute.seconds;
    EXPECT_EQ(part.decoders(static_cast<std::int64_t>(s)), 8);
    EXPECT_NEAR(three.stages[s].recompute.seconds, full * 3 / 8, 1e-12 * full);
    EXPECT_EQ(beyond.stages[s].recompute.seconds, full);
    // The passes themselves do not change.
    EXPECT_EQ(three.stages[s].forward.seconds, all.stages[s].forward.seconds);
    EXPECT_EQ(three.stages[s].backward.seconds, all.stages[s].backward.seconds);
  }
}

TEST(PartialRecompute, MemoryKeepsTheOtherLayersActivations) {
  const Model m = test::catalog_model("llama3.1-8b");
  const auto part = test::uniform_partition(m, 4);
  const LayerActivations kept = layer_activations(m, plan_with(Recompute::kNone, 0), false);
  const LayerActivations input = layer_activations(m, plan_with(Recompute::kFull, 0), false);
  for (std::int64_t s = 0; s < 4; ++s) {
    const PassFootprint all = stage_footprint(m, plan_with(Recompute::kFull, 0), part, s, 128256);
    const PassFootprint three = stage_footprint(m, plan_with(Recompute::kFull, 3), part, s, 128256);
    const PassFootprint none = stage_footprint(m, plan_with(Recompute::kNone, 0), part, s, 128256);
    // Five of the eight layers keep everything instead of their input alone.
    EXPECT_NEAR(three.saved, all.saved + 5 * (kept.saved - input.saved), 1e-6 * three.saved);
    EXPECT_NEAR(none.saved, all.saved + 8 * (kept.saved - input.saved), 1e-6 * none.saved);
    // A recomputed layer's rebuilt activations still pass through memory in the backward.
    EXPECT_EQ(three.backward_transient, all.backward_transient);
  }
}

TEST(PartialRecompute, InterleavedChunksEachRecomputeTheirFirstLayers) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan p = plan_with(Recompute::kFull, 1);
  p.vp = 2;
  p.schedule = ScheduleKind::kInterleaved;
  const Partition part = megatron_uniform_partition(m, p, {});
  ASSERT_EQ(part.num_stages(), 8);
  Plan every = p;
  every.recompute_num_layers = 0;
  const CostModel one = compute_costs(m, pf, p, part);
  const CostModel all = compute_costs(m, pf, every, part);
  for (std::size_t v = 0; v < 8; ++v) {
    EXPECT_EQ(part.decoders(static_cast<std::int64_t>(v)), 4);
    EXPECT_NEAR(one.stages[v].recompute.seconds, all.stages[v].recompute.seconds / 4,
                1e-12 * all.stages[v].recompute.seconds);
  }
}

TEST(PartialRecompute, NeedsFullRecomputationAndReadsAsItsFlag) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan p = plan_with(Recompute::kSelective, 0);
  p.recompute_num_layers = 2;
  p.dp = 1;
  p.gbs = 8;
  try {
    validate_plan(p, m, pf, PlanOrigin{});
    FAIL() << "selective with --recompute-num-layers accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--recompute-num-layers: needs --recompute full (got selective)");
  }
  // Choosing a recomputation anew takes every layer again.
  EXPECT_EQ(recomputing(plan_with(Recompute::kFull, 2), Recompute::kFull).recompute_num_layers, 0);
  EXPECT_TRUE(plan_with(Recompute::kFull, 2).fully_recomputes(1));
  EXPECT_FALSE(plan_with(Recompute::kFull, 2).fully_recomputes(2));
  EXPECT_FALSE(plan_with(Recompute::kNone, 0).fully_recomputes(0));
}

// Megatron-LM's uniform method with N > 1 (--recompute-method uniform --recompute-num-layers N):
// every layer runs its forward again, as full recomputation; the layers, N consecutive ones at a
// time, keep one input per group; and a group's backward rebuilds its N layers at once.
TEST(PartialRecompute, UniformGroupsKeepOneInputAndRebuildTogether) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto part = test::uniform_partition(m, 4);  // 8 layers a stage
  const auto uniform = [](std::int64_t n) {
    Plan p = plan_with(Recompute::kFull, n);
    p.recompute_method = RecomputeMethod::kUniform;
    return p;
  };
  const Plan every = plan_with(Recompute::kFull, 0);
  const LayerActivations layer = layer_activations(m, every, false);
  const CostModel all = compute_costs(m, pf, every, part);
  for (const std::int64_t n : {1, 3, 4, 8}) {
    const CostModel grouped = compute_costs(m, pf, uniform(n), part);
    const std::int64_t groups = (8 + n - 1) / n;  // 8, 3 (3 + 3 + 2), 2, 1
    for (std::int64_t s = 0; s < 4; ++s) {
      const auto i = static_cast<std::size_t>(s);
      EXPECT_EQ(grouped.stages[i].recompute.seconds, all.stages[i].recompute.seconds);
      const PassFootprint a = stage_footprint(m, every, part, s, 128256);
      const PassFootprint g = stage_footprint(m, uniform(n), part, s, 128256);
      EXPECT_NEAR(g.saved, a.saved - static_cast<double>(8 - groups) * layer.saved, 1e-9 * a.saved)
          << n;
      // The middle stages' largest transient is the largest group rebuilt.
      if (s == 1 || s == 2) {
        EXPECT_DOUBLE_EQ(a.backward_transient, layer.recompute);
        EXPECT_DOUBLE_EQ(g.backward_transient, static_cast<double>(n) * layer.recompute) << n;
      }
    }
  }
  EXPECT_EQ(test::plan_error(uniform(2), m), "(valid)");
  Plan selective = recomputing(Plan{}, Recompute::kSelective);
  selective.seq_len = 4096;
  selective.recompute_method = RecomputeMethod::kUniform;
  EXPECT_EQ(test::plan_error(selective, m),
            "--recompute-method: needs --recompute full (got selective)");
}

}  // namespace
}  // namespace trainsim
