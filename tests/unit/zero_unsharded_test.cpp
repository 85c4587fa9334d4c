// zero-unsharded: ZeRO over a data-parallel group of one GPU shards nothing. Stage 1 costs
// nothing either (an info); stages 2 and 3 hold their working set for nothing (a warning), whose
// bytes are checked in closed form, and the fix lists the lower stages with their peaks.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sim/check/diagnostic.hpp"
#include "sim/core/format.hpp"
#include "sim/memory/memory.hpp"
#include "tests/unit/check_support.hpp"

namespace trainsim {
namespace {

// Llama 3.1 8B over one TP group of 8 GPUs, no data parallelism, at ZeRO stage `zero`.
std::map<std::string, std::string> one_replica(const std::string& zero) {
  return {{"tp", "8"},  {"dp", "1"},         {"mbs", "2"},
          {"gbs", "8"}, {"seq_len", "8192"}, {"zero", zero}};
}

// The worst stage of a checked plan: its peak per GPU and the activations at that peak.
struct Peak {
  double bytes = 0;
  double activations = 0;
};

Peak peak_of(const Checked& c) {
  const auto costs = compute_costs(c.in.model, c.in.platform, c.in.plan, c.partition);
  const MemoryModel mm = compute_memory(c.in.model, c.in.platform, c.in.plan, c.partition, costs);
  const StageMemory& s = mm.stages[static_cast<std::size_t>(mm.worst_stage())];
  return {s.peak_bytes, s.activations_at_peak()};
}

// The plan's one zero-unsharded finding (pointing into `c`).
const Diagnostic* only(const Checked& c) {
  const auto found = c.with_id("zero-unsharded");
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? nullptr : found[0];
}

TEST(ZeroUnsharded, StageOneOverOneGpuShardsNothingAndCostsNothing) {
  const Checked c = check_model("llama3.1-8b", one_replica("1"));
  const Diagnostic* d = only(c);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kInfo);
  EXPECT_EQ(d->message,
            "ZeRO stage 1 shards over a group of one GPU (dp x cp = 1): there is nothing to "
            "shard, so every GPU keeps all its optimizer state, gradients and weights, as "
            "without ZeRO");
  // The same memory as without ZeRO, to the byte, and the same step.
  const Peak none = peak_of(check_model("llama3.1-8b", one_replica("0")));
  EXPECT_DOUBLE_EQ(peak_of(c).bytes, none.bytes);
  EXPECT_EQ(d->fix.rfind("--zero 0 (same GPUs): step ", 0), 0u) << d->fix;
  EXPECT_TRUE(contains(d->fix, "(0.0 % vs ")) << d->fix;
  EXPECT_TRUE(contains(d->fix, ", peak " + format_bytes(none.bytes))) << d->fix;
}

// Stage 2 keeps a block's full FP32 gradients before their reduce-scatter and stage 3 also the
// gathered BF16 weights of two blocks, in the forward and the backward: the largest block here is
// the LM head's share, 129,024 padded rows x 4,096 / tp 8 = 66,060,288 parameters.
TEST(ZeroUnsharded, StagesTwoAndThreeHoldTheirWorkingSetForNothing) {
  const double block = 129024.0 * 4096 / 8;
  const Peak none = peak_of(check_model("llama3.1-8b", one_replica("0")));
  const Checked two = check_model("llama3.1-8b", one_replica("2"));
  const Checked three = check_model("llama3.1-8b", one_replica("3"));
  EXPECT_DOUBLE_EQ(peak_of(two).activations - none.activations, 4 * block);
  EXPECT_DOUBLE_EQ(peak_of(three).activations - none.activations, (4 + 2 * 2) * block);
  const Diagnostic* d = only(three);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_TRUE(contains(d->message,
                       "and still holds stage 3's working set for nothing (a block's full "
                       "gradients before their reduce-scatter, and the gathered weights of two "
                       "blocks): the worst stage's peak is " +
                           format_bytes(peak_of(three).bytes) + " per GPU"))
      << d->message;
  // Both lower stages, each at the peak without ZeRO.
  const std::string peak = ", peak " + format_bytes(none.bytes);
  const auto zero0 = d->fix.find("--zero 0 (same GPUs): step ");
  const auto zero1 = d->fix.find("; or --zero 1 (same GPUs): step ");
  EXPECT_EQ(zero0, 0u) << d->fix;
  ASSERT_NE(zero1, std::string::npos) << d->fix;
  EXPECT_EQ(d->fix.substr(zero1 - peak.size(), peak.size()), peak);
  EXPECT_EQ(d->fix.substr(d->fix.size() - peak.size()), peak);
}

// Where an option needs the distributed optimizer, stage 0 is refused and only stage 1 offered.
TEST(ZeroUnsharded, OptionsThatNeedTheDistributedOptimizerKeepStageOne) {
  auto flags = one_replica("2");
  flags["precision"] = "fp8";
  flags["fp8_param_gather"] = "true";
  const Checked c = check_model("llama3.1-8b", flags);  // `only` points into it
  const Diagnostic* d = only(c);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->fix.rfind("--zero 1 (same GPUs): step ", 0), 0u) << d->fix;
  EXPECT_FALSE(contains(d->fix, "--zero 0")) << d->fix;
}

TEST(ZeroUnsharded, SilentWhereThereIsAGroupToShardOver) {
  auto flags = one_replica("1");
  flags["dp"] = "2";
  EXPECT_TRUE(check_model("llama3.1-8b", flags).with_id("zero-unsharded").empty());
  flags["dp"] = "1";
  flags["cp"] = "2";  // the optimizer shards over dp x cp
  EXPECT_TRUE(check_model("llama3.1-8b", flags).with_id("zero-unsharded").empty());
  EXPECT_TRUE(check_model("llama3.1-8b", one_replica("0")).with_id("zero-unsharded").empty());
}

// An MoE model's experts shard over their own group, world / (etp x ep x pp): with dp 1, tp 4
// and ep 2 that is 2 GPUs, so ZeRO shards the experts' state; at ep 4 it is one.
TEST(ZeroUnsharded, ExpertsShardOverTheirOwnGroup) {
  std::map<std::string, std::string> flags = {{"tp", "4"},  {"sp", "true"}, {"ep", "2"},
                                              {"etp", "1"}, {"dp", "1"},    {"seq_len", "4096"},
                                              {"gbs", "8"}, {"zero", "1"}};
  EXPECT_TRUE(check_model("mixtral-8x7b", flags).with_id("zero-unsharded").empty());
  flags["ep"] = "4";
  const Checked c = check_model("mixtral-8x7b", flags);
  const Diagnostic* d = only(c);
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(contains(d->message,
                       "(dp x cp = 1, and for the experts world / (etp x ep x pp) = "
                       "1): there is nothing to shard"))
      << d->message;
}

}  // namespace
}  // namespace trainsim
