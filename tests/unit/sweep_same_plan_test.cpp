// A sweep that varies a field which changes nothing in some of its plans (--sp at tp 1,
// --cp-comm-type at cp 1) names each such plan twice: the second is status "same", naming the
// row that prices it, so that the fastest plans and the counts list each plan once.
#include <gtest/gtest.h>

#include <set>

#include "sim/cli/sweep_spec.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/plan/plan_schema.hpp"
#include "sim/sweep/sweep_csv.hpp"
#include "sim/sweep/sweep_summary.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// 8 GPUs: tp 1 or 2, cp 1 or 2, sp and cp_comm_type both ways: 16 points.
const char* kSweep = R"({"model": "llama3.1-8b", "gpus": 8,
  "plan": {"seq_len": 4096, "gbs": 16, "zero": 1, "pp": 2},
  "vary": {"tp": [1, 2], "sp": [true, false], "cp": [1, 2], "cp_comm_type": ["a2a", "p2p"]}})";

SweepSpec spec_of(const char* text) {
  return parse_sweep_spec(text, test::make_temp_dir() + "/sweep.json");
}

Plan plan_at(const SweepSpec& spec, std::int64_t index) {
  return std::get<Plan>(sweep_plan(sweep_point(spec, index)));
}

std::optional<std::string> same_at(const SweepSpec& spec, std::int64_t index) {
  return same_plan_as(spec, sweep_point(spec, index), plan_at(spec, index));
}

TEST(SweepSameAsAnotherRow, NamesTheRowWithTheFieldsDefault) {
  const SweepSpec spec = spec_of(kSweep);
  ASSERT_EQ(sweep_size(spec), 16);
  // Index = tp x 8 + sp x 4 + cp x 2 + comm (each the value's position in its list).
  std::set<std::int64_t> same;
  for (std::int64_t i = 0; i < 16; ++i) {
    const Plan p = plan_at(spec, i);
    const bool sp_idle = p.tp == 1 && p.sp;
    const bool comm_idle = p.cp == 1 && p.cp_comm != CpComm::kP2P;
    const auto why = same_at(spec, i);
    ASSERT_EQ(why.has_value(), sp_idle || comm_idle) << i;
    if (why) same.insert(i);
  }
  // tp 1, sp true: 0-3 (all four); tp 1, sp false, cp 1, a2a: 4; tp 2, cp 1, a2a: 8, 12.
  EXPECT_EQ(same, (std::set<std::int64_t>{0, 1, 2, 3, 4, 8, 12}));
  EXPECT_EQ(*same_at(spec, 2),
            "sp: the same plan as row 6 (sp false), priced there: Megatron-LM "
            "turns sequence parallelism off at tp 1");
  EXPECT_EQ(*same_at(spec, 0),
            "sp: the same plan as row 5 (sp false, cp_comm_type p2p), priced there: Megatron-LM "
            "turns sequence parallelism off at tp 1; without context parallelism (cp 1) each GPU "
            "runs the attention over its whole sequence");
  EXPECT_EQ(*same_at(spec, 12),
            "cp_comm_type: the same plan as row 13 (cp_comm_type p2p), priced there: without "
            "context parallelism (cp 1) each GPU runs the attention over its whole sequence");
  // The row named is one the sweep prices, with the same plan as the report writes it but for
  // the fields that change nothing, and the same step.
  const Model model = test::catalog_model("llama3.1-8b");
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  for (const auto& [dup, kept] :
       std::vector<std::pair<int, int>>{{0, 5}, {2, 6}, {4, 5}, {12, 13}}) {
    EXPECT_FALSE(same_at(spec, kept).has_value());
    const SweepRow a = evaluate_sweep_plan(model, platform, plan_at(spec, dup), dup);
    const SweepRow b = evaluate_sweep_plan(model, platform, plan_at(spec, kept), kept);
    ASSERT_EQ(a.status, SweepStatus::kOk) << a.reason;
    ASSERT_EQ(b.status, SweepStatus::kOk) << b.reason;
    EXPECT_EQ(a.step_s, b.step_s) << dup;
    EXPECT_EQ(a.peak_bytes, b.peak_bytes) << dup;
  }
}

TEST(SweepSameAsAnotherRow, OnlyWhereTheAxisHoldsTheDefault) {
  // sp true alone at tp 1: no other row prices the plan, so it is priced here.
  const SweepSpec spec = spec_of(R"({"model": "llama3.1-8b", "gpus": 8,
    "plan": {"seq_len": 4096, "sp": true}, "vary": {"tp": [1, 2]}})");
  EXPECT_FALSE(same_at(spec, 0).has_value());
  const SweepSpec comm = spec_of(R"({"model": "llama3.1-8b", "gpus": 8,
    "plan": {"seq_len": 4096}, "vary": {"cp": [1, 2], "cp_comm_type": ["a2a", "allgather"]}})");
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_FALSE(same_at(comm, i).has_value()) << i;
}

TEST(SweepSameAsAnotherRow, RulesComeFirstAndTheSummaryCountsItApart) {
  const Model model = test::catalog_model("llama3.1-8b");
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  const SweepSpec spec = spec_of(kSweep);
  // A plan a rule refuses stays refused by that rule (--tp-comm-overlap at tp 1).
  Plan refused = plan_at(spec, 0);
  refused.tp_comm_overlap = true;
  EXPECT_EQ(evaluate_sweep_plan(model, platform, refused, 0, nullptr, same_at(spec, 0)).status,
            SweepStatus::kRule);
  std::vector<std::string> lines;
  for (std::int64_t i = 0; i < 16; ++i) {
    const Plan p = plan_at(spec, i);
    const SweepRow row = evaluate_sweep_plan(model, platform, p, i, nullptr,
                                             same_plan_as(spec, sweep_point(spec, i), p));
    lines.push_back(sweep_csv_line(row, {}));
  }
  const std::string summary = sweep_summary(sweep_entries(lines), 20, std::nullopt);
  EXPECT_NE(summary.find("16 plans on 8 GPUs: 9 simulated; 7 the same plan as another row; "
                         "refused by rule 0"),
            std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("x same"), std::string::npos) << summary;
}

}  // namespace
}  // namespace trainsim
