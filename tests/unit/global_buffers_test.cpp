// Megatron-Core's global memory buffers (GlobalMemoryBuffer in megatron/core/utils.py): each
// named buffer is allocated at its first request, grown to the largest and kept, so it sits in
// the allocated runtime of every step. "mpu": the output layer's input gathered over TP under
// sequence parallelism, and the all-gather token dispatcher's tokens gathered over expert TP x
// EP (one buffer, the larger); "mpu_0" and "mpu_1": the flush's gathered inputs of the deferred
// LM-head weight gradients.
#include <gtest/gtest.h>

#include <utility>

#include "sim/cost/stage_cost.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/partition.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// Runtime allocated bytes of the first and the last stage.
std::pair<double, double> runtime(const Model& m, const Plan& plan) {
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  const Partition part = megatron_uniform_partition(m, plan, {});
  const CostModel costs = compute_costs(m, platform, plan, part);
  const MemoryModel mem = compute_memory(m, platform, plan, part, costs);
  return {mem.stages.front().runtime_allocated, mem.stages.back().runtime_allocated};
}

// llama3.1-8b on TP 2, PP 2: two sequences of 4,096 tokens a micro-batch, 8 micro-batches.
Plan dense_plan() {
  Plan p;
  p.tp = 2;
  p.sp = true;
  p.pp = 2;
  p.mbs = 2;
  p.seq_len = 4096;
  p.gbs = 16;
  return p;
}

constexpr double kGathered = 8192.0 * 4096.0 * 2.0;  // T x h in BF16

TEST(GlobalMemoryBuffers, TheLastStageKeepsTheLmHeadsGatheredInput) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p = dense_plan();
  auto [first, last] = runtime(m, p);
  EXPECT_DOUBLE_EQ(last - first, kGathered);
  p.cp = 2;  // half the tokens on each GPU
  std::tie(first, last) = runtime(m, p);
  EXPECT_DOUBLE_EQ(last - first, kGathered / 2);
  p.cp = 1;
  p.sp = false;  // the LM head's input is whole already: nothing gathered
  std::tie(first, last) = runtime(m, p);
  EXPECT_DOUBLE_EQ(last, first);
  p.sp = true;
  p.framework = Framework::kNanotron;  // its own column linear, no global buffer
  std::tie(first, last) = runtime(m, p);
  EXPECT_DOUBLE_EQ(last, first);
}

// The flush gathers the first deferred input into "mpu_0" and each later one, alternately, into
// "mpu_1" and "mpu_0": one buffer for one deferred micro-batch, two from two on.
TEST(GlobalMemoryBuffers, TheFlushKeepsItsDoubleBuffer) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p = dense_plan();
  p.defer_embedding_wgrad_compute = true;
  p.wgrad_deferral_limit = 1;
  auto [first, last] = runtime(m, p);
  EXPECT_DOUBLE_EQ(last - first, 2 * kGathered);
  p.wgrad_deferral_limit = 0;  // all 8
  std::tie(first, last) = runtime(m, p);
  EXPECT_DOUBLE_EQ(last - first, 3 * kGathered);
  p.sp = false;  // the flush gathers nothing
  std::tie(first, last) = runtime(m, p);
  EXPECT_DOUBLE_EQ(last, first);
}

// The all-gather dispatcher gathers each GPU's T / tp tokens over expert TP x EP (2 x 4) into the
// same "mpu" buffer as the LM head's input: the larger is kept, on every stage with MoE layers.
TEST(GlobalMemoryBuffers, TheAllGatherDispatcherSharesTheBuffer) {
  const Model m = test::catalog_model("mixtral-8x7b");
  Plan p;
  p.tp = 2;
  p.sp = true;
  p.pp = 2;
  p.dp = 4;
  p.ep = 4;
  p.mbs = 1;
  p.seq_len = 4096;
  p.gbs = 8;
  const auto [a2a_first, a2a_last] = runtime(m, p);
  EXPECT_NEAR(a2a_last - a2a_first, 4096.0 * 4096.0 * 2.0, 1.0);  // the LM head's alone
  p.moe_dispatcher = MoeDispatcher::kAllGather;
  const auto [first, last] = runtime(m, p);
  const double gathered = 4096.0 / 2 * (2 * 4) * 4096.0 * 2.0;
  EXPECT_NEAR(first - a2a_first, gathered, 1.0);  // bytes, over a sum of ~10^8
  EXPECT_NEAR(last - a2a_first, gathered, 1.0);   // not that plus the LM head's
}

}  // namespace
}  // namespace trainsim
