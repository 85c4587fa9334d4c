// Tensor-parallel groups that leave a node where TP does not divide it: GPT-3 175B (96 heads) at
// tp 3 over 8-GPU nodes, dp 2 and pp 16: stage 0's groups (ranks 0-2, 3-5) lie in node 0, stage
// 1's first (ranks 6-8) straddles nodes 0 and 1. Rank 0's group alone said nothing was wrong.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/check_support.hpp"

namespace trainsim {
namespace {

std::vector<Diagnostic> tp_across_nodes(std::map<std::string, std::string> flags) {
  const Checked checked = check_model("gpt3-175b", std::move(flags));
  std::vector<Diagnostic> found;
  for (const Diagnostic* d : checked.with_id("tp-across-nodes")) found.push_back(*d);
  return found;
}

std::vector<Diagnostic> tp_across_nodes(const std::string& tp, const std::string& dp) {
  return tp_across_nodes({{"tp", tp},
                          {"pp", "16"},
                          {"dp", dp},
                          {"zero", "1"},
                          {"seq_len", "2048"},
                          {"gbs", "48"},
                          {"recompute", "full"}});
}

TEST(Diagnostics, TpThatDoesNotDivideANodeStraddlesTwo) {
  const auto found = tp_across_nodes("3", "2");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  EXPECT_EQ(found[0].message,
            "tensor parallelism of 3 does not divide the 8 GPUs of a node: the TP group of ranks "
            "6 to 8 straddles two nodes, and the step waits for its all-reduces over the network");
  // The largest TP up to 3 that divides a node and the GPUs, 2, with PP taking the rest (96
  // layers over 24 stages) or DP (slower: 3 replicas of a model a third wider per GPU).
  EXPECT_EQ(found[0].fix.rfind("--tp 2 --pp 24 (same GPUs): step ", 0), 0u) << found[0].fix;
  EXPECT_NE(found[0].fix.find("; or --tp 2 --dp 3 (same GPUs): step "), std::string::npos)
      << found[0].fix;
  EXPECT_TRUE(tp_across_nodes("2", "3").empty());
}

// TP 16 over 8-GPU nodes at pp 4: TP within a node with DP growing does not fit (GPT-3 175B in
// 16 shards per stage was what fit), with PP growing it does, and is faster.
TEST(Diagnostics, TpWiderThanANodeFitsWithinOneDeeper) {
  const auto found = tp_across_nodes(
      {{"tp", "16"}, {"sp", "true"}, {"pp", "4"}, {"dp", "1"}, {"seq_len", "2048"}, {"gbs", "16"}});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].fix.rfind("--tp 8 --pp 8 (same GPUs): step ", 0), 0u) << found[0].fix;
  EXPECT_NE(found[0].fix.find("(-"), std::string::npos) << found[0].fix;  // faster
}

}  // namespace
}  // namespace trainsim
