// check's look at the neighbourhood: a plan whose shape wastes its GPUs is told which plan one
// step away is much faster, with what dominates its own step.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/core/format.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/model/model.hpp"
#include "sim/search/candidates.hpp"
#include "sim/search/diagnose.hpp"
#include "sim/search/neighbourhood.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan deep_pipeline() {
  Plan p;
  p.pp = 8;
  p.gbs = 64;
  p.seq_len = 4096;
  p.partition = "balanced";
  return p;
}

std::optional<Diagnostic> nearby(const Model& m, const Plan& p) {
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const Partition part = build_partition(m, pf, p);
  for (auto& d : diagnose(m, pf, p, part, compute_costs(m, pf, p, part))) {
    if (d.id == "faster-plan-nearby") return d;
  }
  return std::nullopt;
}

double step(const Model& m, const Plan& p) {
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  return evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s;
}

// A 2B model with a 256,000-word vocabulary at pp 8 on 8 GPUs: the LM head's stage sets the pace
// and the others wait. pp 1 x dp 8 on the same GPUs is the fastest neighbour.
TEST(Neighbourhood, DeepPipelineOfASmallModelIsToldOfTheFasterPlan) {
  const Model m = load_model(test::source_dir() + "/tests/data/models/small-256k-vocab.json");
  const Plan p = deep_pipeline();
  const auto d = nearby(m, p);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->severity, Severity::kWarning);
  Plan flat = p;
  flat.pp = 1;
  flat.dp = 8;
  const double ratio = step(m, p) / step(m, flat);
  EXPECT_GE(ratio, kMuchFaster);
  EXPECT_TRUE(d->message.starts_with("--pp 1 --dp 8 on the same 8 GPUs runs the step " +
                                     format_fixed(ratio, 1) + "x faster: this plan's step is "))
      << d->message;
  EXPECT_NE(d->message.find("pipeline bubble and waits"), std::string::npos);
  // The fix lists the three fastest, fastest first.
  EXPECT_TRUE(d->fix.starts_with("--pp 1 --dp 8: step ")) << d->fix;
  EXPECT_EQ(std::count(d->fix.begin(), d->fix.end(), ';'), 2) << d->fix;
}

// A plan whose neighbours are no faster by 25 % hears nothing.
TEST(Neighbourhood, WellShapedPlanHearsNothing) {
  Plan p;
  p.dp = 8;
  p.gbs = 64;
  p.seq_len = 4096;
  p.zero = 1;
  EXPECT_FALSE(nearby(test::catalog_model("llama3.1-8b"), p));
}

TEST(Neighbourhood, NeighboursAreOneStepAwayOnTheSameGpus) {
  Plan p;
  p.tp = 2;
  p.pp = 4;
  p.dp = 2;
  p.mbs = 2;
  p.gbs = 64;
  const Model dense = test::catalog_model("llama3.1-8b");
  const auto plans = neighbouring_plans(p, dense, 8);
  for (const Plan& q : plans) EXPECT_EQ(q.world_size(), 16);
  // pp 2 and 1, pp 8, tp 4, tp 1, interleaved vp 2, mbs 4 and 1, two recomputations, cp 2 (dp 1);
  // no EP for a dense model.
  EXPECT_EQ(plans.size(), 11u);
  EXPECT_EQ(std::count_if(plans.begin(), plans.end(),
                          [](const Plan& q) { return q.cp == 2 && q.dp == 1 && q.tp == 2; }),
            1);
  EXPECT_TRUE(std::none_of(plans.begin(), plans.end(), [](const Plan& q) { return q.ep != 1; }));
  // A mixture-of-experts model at EP 1 also gets EP 2, and under TP 2 expert TP 1.
  const Model moe = test::catalog_model("mixtral-8x7b");
  const auto experts = neighbouring_plans(p, moe, 8);
  EXPECT_EQ(experts.size(), 13u);
  EXPECT_EQ(std::count_if(experts.begin(), experts.end(), [](const Plan& q) { return q.ep == 2; }),
            1);
  EXPECT_EQ(std::count_if(experts.begin(), experts.end(),
                          [](const Plan& q) { return q.expert_tp() == 1 && q.tp == 2; }),
            1);
  // From expert TP 1 the neighbour is expert TP as tp.
  Plan whole = p;
  whole.etp = 1;
  const auto back = neighbouring_plans(whole, moe, 8);
  EXPECT_EQ(std::count_if(back.begin(), back.end(),
                          [](const Plan& q) { return q.etp == 0 && q.tp == 2; }),
            1);
  // With CP 2 and EP 2 also CP 1 (dp 4), CP 4 (dp 1), EP 4 and EP 1.
  p.cp = 2;
  p.dp = 1;
  p.tp = 2;
  p.pp = 2;
  p.ep = 2;
  const auto more = neighbouring_plans(p, moe, 8);
  for (const Plan& q : more) EXPECT_EQ(q.world_size(), 8);
  const auto has = [&](std::int64_t cp, std::int64_t dp, std::int64_t ep) {
    return std::any_of(more.begin(), more.end(), [&](const Plan& q) {
      return q.cp == cp && q.dp == dp && q.ep == ep && q.tp == 2 && q.pp == 2;
    });
  };
  EXPECT_TRUE(has(1, 2, 2));
  EXPECT_TRUE(has(2, 1, 4));
  EXPECT_TRUE(has(2, 1, 1));
  EXPECT_FALSE(has(4, 0, 2));  // dp 1 cannot halve
}

}  // namespace
}  // namespace trainsim
