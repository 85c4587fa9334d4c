#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/plan/plan_variants.hpp"
#include "sim/search/candidates.hpp"
#include "tests/support/support.hpp"

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
  for (const auto& ladder :
       layouts_on(p, 8, 8, test::catalog_model("llama3.1-8b"), Recompute::kNone)) {
    for (const Plan& c : ladder) EXPECT_EQ(c.tp_comm_overlap, c.tp > 1) << c.tp;
  }
}

// A plan recomputing chosen modules selectively: every candidate with another granularity keeps
// Megatron-LM's default modules, since Megatron-LM refuses --recompute-modules without selective
// recomputation; such candidates were refused by that rule and never priced, so an oom fix never
// offered full recomputation to such a plan. Selective candidates keep the plan's modules.
TEST(Candidates, AnotherRecomputationDropsTheSelectiveModules) {
  Plan p;
  p.tp = 2;
  p.dp = 4;
  p.sp = true;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = kRecomputeCoreAttn | kRecomputeMlp;
  std::int64_t full = 0, none = 0, selective = 0;
  auto count = [&](const Plan& c) {
    if (c.recompute == Recompute::kSelective) {
      ++selective;
      EXPECT_EQ(c.recompute_modules, p.recompute_modules);
      return;
    }
    (c.recompute == Recompute::kFull ? full : none)++;
    EXPECT_EQ(c.recompute_modules, kRecomputeCoreAttn);
  };
  const Model model = test::catalog_model("llama3.1-8b");
  for (const Plan& c : memory_saving_changes(p, model, 8)) count(c);
  EXPECT_EQ(full, 1);  // the memory fixes' full recomputation
  for (const Plan& c : neighbouring_plans(p, model, 8)) count(c);
  EXPECT_EQ(full, 2);
  EXPECT_GE(none, 1);
  EXPECT_GT(selective, 0);
  for (const Recompute r : {Recompute::kNone, Recompute::kFull}) {
    for (const auto& ladder : layouts_on(p, 8, 8, model, r)) {
      for (const Plan& c : ladder) EXPECT_EQ(c.recompute_modules, kRecomputeCoreAttn);
    }
  }
  EXPECT_EQ(recomputing(p, Recompute::kSelective).recompute_modules, p.recompute_modules);
}

// The layouts of a cluster: CP every power of two that splits the sequence into 2 x CP chunks,
// and for a mixture-of-experts model every power-of-two EP that divides its experts and, over the
// expert TP, the stage's tp x cp x dp GPUs (Megatron-Core's rules); a dense model only EP 1.
TEST(Candidates, LayoutsTakeEveryContextAndExpertParallelSize) {
  Plan p;
  p.seq_len = 4096;
  p.gbs = 64;
  const Model mixtral = test::catalog_model("mixtral-8x7b");  // 8 experts, 32 layers
  // (cp, tp, pp, expert TP) -> the EP sizes of that layout's ladders.
  using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  std::map<Key, std::vector<std::int64_t>> eps;
  for (const auto& ladder : layouts_on(p, 16, 8, mixtral, Recompute::kNone)) {
    const Plan& c = ladder.front();
    EXPECT_EQ(c.tp * c.cp * c.pp * c.dp, 16);
    eps[{c.cp, c.tp, c.pp, c.expert_tp()}].push_back(c.ep);
  }
  using Eps = std::vector<std::int64_t>;
  EXPECT_EQ(eps.at({1, 1, 1, 1}), (Eps{1, 2, 4, 8}));   // dp 16: all, 8 experts the most
  EXPECT_EQ(eps.at({1, 2, 1, 2}), (Eps{1, 2, 4, 8}));   // etp = tp 2: EP divides dp 8
  EXPECT_EQ(eps.at({1, 4, 2, 4}), (Eps{1, 2}));         // dp 2
  EXPECT_EQ(eps.at({1, 8, 2, 8}), (Eps{1}));            // dp 1
  EXPECT_EQ(eps.at({4, 2, 1, 2}), (Eps{1, 2, 4, 8}));   // cp 4 x dp 2
  EXPECT_EQ(eps.at({16, 1, 1, 1}), (Eps{1, 2, 4, 8}));  // cp 16, 4096 = 2 x 16 x 128
  EXPECT_FALSE(eps.contains({32, 1, 1, 1}));            // only 16 GPUs
  // Under TP each layout is also tried with expert TP 1, EP then spanning the TP GPUs too.
  EXPECT_EQ(eps.at({1, 4, 2, 1}), (Eps{1, 2, 4, 8}));  // over tp 4 x dp 2
  EXPECT_EQ(eps.at({1, 8, 2, 1}), (Eps{1, 2, 4, 8}));  // over tp 8 x dp 1
  for (const auto& [key, sizes] : eps) {               // each TP layout both ways, nothing else
    const auto [cp, tp, pp, etp] = key;
    EXPECT_TRUE(etp == tp || etp == 1) << tp << " " << etp;
    if (tp > 1) {
      EXPECT_TRUE(eps.contains({cp, tp, pp, etp == 1 ? tp : 1})) << cp << tp << pp;
    }
  }
  // With expert TP 1 the experts take the TP ranks too: ep x 1 divides tp x cp x dp.
  p.etp = 1;
  Eps tp8;
  for (const auto& ladder : layouts_on(p, 16, 8, mixtral, Recompute::kNone)) {
    const Plan& c = ladder.front();
    if (c.cp == 1 && c.tp == 8 && c.pp == 2) tp8.push_back(c.ep);
  }
  EXPECT_EQ(tp8, (Eps{1, 2, 4, 8}));  // over tp 8 x dp 1, once: the plan's expert TP is 1
  // A sequence of 8 tokens splits into 2 x CP chunks up to CP 4; a dense model takes EP 1 only.
  p.etp = 0;
  p.seq_len = 8;
  std::int64_t most_cp = 0;
  for (const auto& ladder :
       layouts_on(p, 16, 8, test::catalog_model("llama3.1-8b"), Recompute::kNone)) {
    most_cp = std::max(most_cp, ladder.front().cp);
    EXPECT_EQ(ladder.front().ep, 1);
  }
  EXPECT_EQ(most_cp, 4);
}

// Megatron's uneven ends as a fix: the middle stages take num_layers / pp rounded up to a
// multiple of vp (or one or two vp more), and the ends split the rest in multiples of vp, none
// above a middle stage; the uniform split is not a candidate.
TEST(Candidates, UnevenEndsSplitTheRestOverTheEnds) {
  const auto ends = [](std::int64_t layers, std::int64_t pp, std::int64_t vp) {
    Plan p;
    p.pp = pp;
    p.vp = vp;
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (const Plan& c : uneven_ends(p, layers)) {
      out.emplace_back(c.decoder_first_pipeline_num_layers, c.decoder_last_pipeline_num_layers);
    }
    return out;
  };
  using Ends = std::vector<std::pair<std::int64_t, std::int64_t>>;
  // 126 layers over pp 16 x vp 2: 8 a middle stage leaves 126 - 14 x 8 = 14 for the ends; 10
  // would leave none.
  EXPECT_EQ(ends(126, 16, 2), (Ends{{6, 8}, {8, 6}}));
  // 32 over pp 6: 6 a middle stage leaves 8 for the ends, 7 leaves 4, 8 none.
  EXPECT_EQ(ends(32, 6, 1), (Ends{{2, 6}, {3, 5}, {4, 4}, {5, 3}, {6, 2}, {1, 3}, {2, 2}, {3, 1}}));
  // 80 over pp 4 divides: 20 a middle stage is the uniform split, left out; 21 leaves 38 for the
  // ends, 22 leaves 36.
  const Ends eighty = ends(80, 4, 1);
  EXPECT_EQ(eighty.size(), 5u + 9u);
  EXPECT_EQ(eighty.front(), (std::pair<std::int64_t, std::int64_t>{17, 21}));
  EXPECT_EQ(eighty.back(), (std::pair<std::int64_t, std::int64_t>{22, 14}));
  // Two stages: the ends take every layer, neither above 64 + 2 = 66 of 127.
  EXPECT_EQ(ends(127, 2, 1), (Ends{{61, 66}, {62, 65}, {63, 64}, {64, 63}, {65, 62}, {66, 61}}));
  // A long pipeline: 10,000 layers over pp 100, 101 a middle stage leaves 102 for the ends, split
  // within 8 of each other (47/55 to 55/47); 102 leaves 4.
  const Ends long_pipeline = ends(10000, 100, 1);
  EXPECT_EQ(long_pipeline.size(), 9u + 3u);
  EXPECT_EQ(long_pipeline.front(), (std::pair<std::int64_t, std::int64_t>{47, 55}));
  EXPECT_EQ(ends(42, 16, 1), Ends{});  // 3 a middle stage leaves the ends nothing
  EXPECT_EQ(ends(32, 1, 1), Ends{});
}

// A plan with uneven ends of its own gets the others as candidates (its 2/14 over pp 4 left a
// stage imbalance with no Megatron split offered): its own split left out, and Megatron's
// embedding and loss accounting dropped, as the ends replace it.
TEST(Candidates, UnevenEndsReplaceThePlansOwn) {
  Plan p;
  p.pp = 6;
  p.decoder_first_pipeline_num_layers = 3;
  p.decoder_last_pipeline_num_layers = 5;
  const std::vector<Plan> ends = uneven_ends(p, 32);
  EXPECT_EQ(ends.size(), 7u);  // the eight splits of 32 over pp 6 but 3/5
  for (const Plan& c : ends) {
    EXPECT_FALSE(c.decoder_first_pipeline_num_layers == 3 &&
                 c.decoder_last_pipeline_num_layers == 5);
  }
  p.account_for_loss_in_pipeline_split = true;
  const std::vector<Plan> accounted = uneven_ends(p, 32);
  EXPECT_EQ(accounted.size(), 8u);  // 3/5 without the loss's accounting is another split
  for (const Plan& c : accounted) EXPECT_FALSE(c.account_for_loss_in_pipeline_split);
}

}  // namespace
}  // namespace trainsim
