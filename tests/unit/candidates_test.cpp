#include <gtest/gtest.h>

#include "sim/plan/plan_variants.hpp"
#include "sim/search/candidates.hpp"

namespace trainsim {
namespace {

// A candidate at tp 1 drops the switches that need TP (a plan with them would be rejected, and
// the search would never price a tp 1 layout of a recipe that overlaps its TP communication).
TEST(Candidates, TpOnlySwitchesFollowTp) {
  Plan p;
  p.tp = 4;
  p.dp = 2;
  p.sp = true;
  p.tp_comm_overlap = true;
  const Plan two = with_tp_dp(p, 2, 4);
  EXPECT_TRUE(two.sp);
  EXPECT_TRUE(two.tp_comm_overlap);
  const Plan one = with_tp_dp(p, 1, 8);
  EXPECT_EQ(one.dp, 8);
  EXPECT_FALSE(one.sp);
  EXPECT_FALSE(one.tp_comm_overlap);
  for (const auto& ladder : layouts_on(p, 8, 8, 32, Recompute::kNone)) {
    for (const Plan& c : ladder) EXPECT_EQ(c.tp_comm_overlap, c.tp > 1) << c.tp;
  }
}

}  // namespace
}  // namespace trainsim
