// The plan space: candidates priced once each, infeasible ones as values with their reason, the
// caller's baseline taken as given, the memory requirement with its peak, and a detector's
// priced alternatives written out.
#include "sim/search/plan_space.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "sim/check/detect.hpp"
#include "sim/cli/scenario.hpp"
#include "sim/core/format.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"
#include "sim/search/fixes.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// Llama 3.1 8B unsharded on 8 GPUs (tp 1, pp 1, dp 8, one 8k sequence per GPU): 134.62 GiB of
// model state per GPU does not fit an 80 GiB H100; with ZeRO-3 it does.
struct Space {
  ResolvedInputs in;
  Partition partition;
  std::int64_t calls = 0;  // of the simulator, counted here rather than by the space

  explicit Space(const InputRequest& request = unsharded_8b())
      : in(resolve_inputs(request)), partition(build_partition(in.model, in.platform, in.plan)) {}

  static InputRequest unsharded_8b() {
    InputRequest req;
    req.model = "llama3.1-8b";
    req.platform = "h100-sxm-ndr";
    req.plan_flags = {{"tp", "1"}, {"pp", "1"}, {"dp", "8"}, {"seq_len", "8192"}, {"gbs", "8"}};
    return req;
  }

  // The analytic engine, each call counted.
  Simulator counting() {
    return [this, analytic = analytic_simulator(in.model, in.platform)](const Plan& p,
                                                                        const Partition& part) {
      ++calls;
      return analytic(p, part);
    };
  }

  PlanSpace space(std::optional<double> baseline = std::nullopt) {
    return PlanSpace(in.model, in.platform, in.plan, partition, baseline, counting());
  }

  Plan with_zero(std::int64_t zero) const {
    Plan p = in.plan;
    p.zero = zero;
    return p;
  }

  double worst_peak(const Plan& p) const {
    const Partition part = build_partition(in.model, in.platform, p);
    const MemoryModel m = compute_memory(in.model, in.platform, p, part,
                                         compute_costs(in.model, in.platform, p, part));
    return m.stages[static_cast<std::size_t>(m.worst_stage())].peak_bytes;
  }
};

TEST(PlanSpace, InfeasibleCandidateIsAValueWithItsReason) {
  Space s;
  PlanSpace space = s.space();
  Plan tp3 = s.in.plan;
  tp3.tp = 3;  // Llama 3.1 8B has 32 attention heads
  const Outcome o = space.price({tp3});
  EXPECT_FALSE(o.feasible());
  EXPECT_FALSE(o);
  EXPECT_EQ(o.reason(), "--tp: must divide the attention heads (32), got 3");
  // Asked again, the same value from the cache; nothing was simulated either time.
  EXPECT_EQ(space.price({tp3}, Need::kFits).reason(), o.reason());
  EXPECT_EQ(space.simulations(), 0);
  EXPECT_EQ(s.calls, 0);
}

// nanotron's rule on 12 layers over 8 stages leaves stages 6 and 7 without parameters: buildable
// (and priced as such), but refused where a framework must be able to run it.
TEST(PlanSpace, PartitionDefectRefusesOnlyWhereNoDefectIsNeeded) {
  InputRequest req;
  req.scenario = test::source_dir() + "/scenarios/seeds/nanotron-12l-pp8.json";
  Space s(req);
  PlanSpace space = s.space();
  const Plan& plan = s.in.plan;
  EXPECT_TRUE(space.price({plan}));
  const Outcome refused = space.price({plan}, Need::kNoDefect);
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.reason(), "partition defect: " + *partition_defect(s.partition));
  EXPECT_EQ(refused.reason(), "partition defect: stage 6 has no parameters");
  EXPECT_EQ(s.calls, 1);
}

TEST(PlanSpace, CandidatePricedTwiceIsSimulatedOnce) {
  Space s;
  PlanSpace space = s.space(/*baseline=*/2.0);
  const Plan z3 = s.with_zero(3);
  const Outcome first = space.price({z3});
  const Outcome again = space.price({z3});
  const Outcome fits = space.price({z3}, Need::kFits);  // same candidate, one more requirement
  ASSERT_TRUE(first && again && fits);
  EXPECT_EQ(s.calls, 1);
  EXPECT_EQ(space.simulations(), 1);
  const double step =
      evaluate(s.in.model, s.in.platform, z3, build_partition(s.in.model, s.in.platform, z3))
          .sim.step_time_s;
  EXPECT_EQ(first->step_time_s, step);
  EXPECT_EQ(again->step_time_s, step);
  EXPECT_EQ(fits->step_time_s, step);
  EXPECT_DOUBLE_EQ(first->tokens_per_s, 8.0 * 8192.0 / step);
  // The balanced partition of the same plan is another candidate.
  ASSERT_TRUE(space.price({z3, /*balanced=*/true}));
  EXPECT_EQ(s.calls, 2);
}

TEST(PlanSpace, GivenBaselineIsNotSimulatedAgain) {
  Space s;
  PlanSpace given = s.space(/*baseline=*/1.25);
  EXPECT_EQ(given.baseline(), 1.25);
  EXPECT_EQ(given.simulations(), 0);
  EXPECT_EQ(s.calls, 0);

  PlanSpace own = s.space();
  const double step = evaluate(s.in.model, s.in.platform, s.in.plan, s.partition).sim.step_time_s;
  EXPECT_EQ(own.baseline(), step);
  EXPECT_EQ(own.baseline(), step);
  EXPECT_EQ(own.simulations(), 1);
  EXPECT_EQ(s.calls, 1);
}

TEST(PlanSpace, MemoryNeedReportsPeakAndRefusesWhatDoesNotFit) {
  Space s;
  PlanSpace space = s.space(/*baseline=*/1.0);
  const double unsharded = s.worst_peak(s.in.plan);
  EXPECT_GT(unsharded, 80.0 * (1 << 30));
  const Outcome refused = space.price({s.in.plan}, Need::kFits);
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.reason(), "does not fit: peak " + format_bytes(unsharded));
  EXPECT_EQ(refused.reason(), "does not fit: peak 184.84 GiB");
  EXPECT_EQ(s.calls, 0);  // refused before the simulation

  const Plan z3 = s.with_zero(3);
  const Outcome fits = space.price({z3}, Need::kFits);
  ASSERT_TRUE(fits);
  ASSERT_TRUE(fits->peak_bytes.has_value());
  EXPECT_EQ(*fits->peak_bytes, s.worst_peak(z3));
  EXPECT_EQ(format_bytes(*fits->peak_bytes), "65.27 GiB");
  const Outcome buildable = space.price({z3});  // the peak only where fitting was asked
  ASSERT_TRUE(buildable);
  EXPECT_FALSE(buildable->peak_bytes.has_value());
  EXPECT_EQ(s.calls, 1);
}

// A detector's PricedAlternatives: every candidate that fits, priced and listed fastest first (the
// infeasible and the unsharded one left out); with a min_gain, only those saving that share of the
// step, and the diagnostic withdrawn where none does. Without one it stays, whatever the prices.
TEST(PlanSpace, PricedAlternativesListTheFastestFirstAndWithdrawWhereNoneGains) {
  Space s;
  Plan tp3 = s.in.plan;
  tp3.tp = 3;  // refused: 32 heads
  const Plan z3 = s.with_zero(3);
  Plan z3_full = z3;
  z3_full.recompute = Recompute::kFull;  // the same plan, slower by its recomputation
  const std::vector<Plan> plans = {tp3, s.in.plan, z3_full, z3};
  auto finding = [&](std::optional<double> min_gain) {
    Diagnostic d;
    d.id = "test";
    return Finding{d, PricedAlternatives{plans, min_gain}};
  };
  PlanSpace slow = s.space(/*baseline=*/1e6);
  const auto listed = write_fixes(slow, {finding(0.05)});
  ASSERT_EQ(listed.size(), 1u);
  const std::string& fix = listed[0].fix;
  const auto first = fix.find("--zero 3 (same GPUs): step ");
  const auto second = fix.find("; or --zero 3 --recompute full (same GPUs): step ");
  EXPECT_EQ(first, 0u) << fix;
  EXPECT_NE(second, std::string::npos) << fix;
  EXPECT_EQ(fix.find("--tp 3"), std::string::npos) << fix;
  const Outcome z3_priced = slow.price({z3});
  ASSERT_TRUE(z3_priced);
  PlanSpace fast = s.space(/*baseline=*/z3_priced->step_time_s * 1.04);  // z3 saves under 5 %
  EXPECT_TRUE(write_fixes(fast, {finding(0.05)}).empty());
  const auto kept = write_fixes(fast, {finding(std::nullopt)});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].fix.find("--zero 3 (same GPUs): step "), 0u) << kept[0].fix;
}

}  // namespace
}  // namespace trainsim
