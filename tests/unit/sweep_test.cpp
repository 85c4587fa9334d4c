// The sweep's rows and summary: a row judged and priced, its CSV line read back, labels that tell
// plans apart, and the Pareto front, failures and deadlines of the summary.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "sim/cli/sweep_spec.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan_schema.hpp"
#include "sim/sweep/sweep_csv.hpp"
#include "sim/sweep/sweep_summary.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// A priced row's figures against the plan's own arithmetic, and its CSV line read back.
TEST(SweepRow, PricedRowAndItsCsvLine) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan p;
  p.tp = 2;
  p.dp = 4;
  p.gbs = 64;
  p.seq_len = 4096;
  p.zero = 1;
  const SweepRow row = evaluate_sweep_plan(m, pf, p, 7);
  ASSERT_EQ(row.status, SweepStatus::kOk) << row.reason;
  EXPECT_EQ(row.gpus, 8);
  EXPECT_NEAR(row.tokens_per_s, 64.0 * 4096 / row.step_s, 1e-9 * row.tokens_per_s);
  EXPECT_LT(row.step_p10_s, row.step_s);
  EXPECT_GT(row.step_p90_s, row.step_s);
  EXPECT_GT(row.mfu, 0.2);
  EXPECT_LT(row.mfu, 0.8);
  TrainingBudget budget;
  budget.tokens = 15e12;
  budget.price_per_gpu_hour = 2.0;
  const std::string line = sweep_csv_line(row, budget);
  ASSERT_EQ(line.back(), '\n');
  const std::string body = line.substr(0, line.size() - 1);
  EXPECT_EQ(sweep_csv_index(body), 7);
  const auto entries = sweep_entries({body});
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].plan, "tp 2 pp 1 dp 4 mbs 1 1f1b zero 1");
  EXPECT_NEAR(entries[0].step_s, row.step_s, 1e-6);
  // Days to train 15T tokens, as written: tokens / (tokens/s) / 86,400.
  EXPECT_NEAR(std::stod(entries[0].days), 15e12 / row.tokens_per_s / 86400, 1e-3);
  // A line cut short by a kill is not a row.
  EXPECT_FALSE(sweep_csv_index(body.substr(0, body.size() / 2)));
  EXPECT_FALSE(sweep_csv_index(sweep_csv_header()));
}

// An MoE plan with selective recomputation by module: the modules' list (a comma inside) is one
// quoted cell that reads back, and the label names the expert TP, the all-to-all overlap and the
// modules.
TEST(SweepRow, ExpertPlanWithRecomputedModulesReadsBack) {
  Model m = test::catalog_model("mixtral-8x7b");
  m.num_layers = 2;
  Plan p;
  p.dp = 8;
  p.ep = 8;
  p.etp = 1;
  p.moe_a2a_overlap = true;
  p.gbs = 64;
  p.seq_len = 4096;
  p.zero = 1;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = kRecomputeCoreAttn | kRecomputeMoeAct;
  const SweepRow row = evaluate_sweep_plan(m, test::catalog_platform("h100-sxm-ndr"), p, 3);
  ASSERT_EQ(row.status, SweepStatus::kOk) << row.reason;
  const std::string line = sweep_csv_line(row, {});
  const auto cells = split_csv_line(line.substr(0, line.size() - 1));
  const auto& columns = sweep_csv_columns();
  ASSERT_EQ(cells.size(), columns.size());
  const auto at = std::find(columns.begin(), columns.end(), "recompute_modules") - columns.begin();
  EXPECT_EQ(cells[static_cast<std::size_t>(at)], "core_attn,moe_act");
  const auto entries = sweep_entries({line.substr(0, line.size() - 1)});
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].plan,
            "tp 1 pp 1 dp 8 ep 8 mbs 1 1f1b recompute selective (core_attn,moe_act) zero 1 "
            "ep-overlap");
  // The label is the plan's own, in the schema's order: the columns read back as the plan.
  EXPECT_EQ(entries[0].plan, plan_label(p));
}

// A two-layer llama3.1-8b on dp 8 with the distributed optimizer: a plan a sweep prices in
// milliseconds, for the tests of single plan columns below.
Plan small_sweep_plan() {
  Plan p;
  p.dp = 8;
  p.gbs = 64;
  p.seq_len = 4096;
  p.zero = 1;
  return p;
}

// The plan's priced CSV row, without its newline.
std::string priced_row(const Plan& p) {
  Model m = test::catalog_model("llama3.1-8b");
  m.num_layers = 2;
  const SweepRow row = evaluate_sweep_plan(m, test::catalog_platform("h100-sxm-ndr"), p, 0);
  EXPECT_EQ(row.status, SweepStatus::kOk) << row.reason;
  const std::string line = sweep_csv_line(row, {});
  return line.substr(0, line.size() - 1);
}

// The index of a CSV column (the column count where there is none).
std::size_t csv_column(const std::string& name) {
  const auto& columns = sweep_csv_columns();
  return static_cast<std::size_t>(std::find(columns.begin(), columns.end(), name) -
                                  columns.begin());
}

// Plans that differ only in their multi-token-prediction modules write different rows: the
// count as given, blank where the model's own applies (as the report's plan echoes it).
TEST(SweepRow, MultiTokenPredictionModulesHaveAColumn) {
  Plan p = small_sweep_plan();
  const auto at = csv_column("mtp_num_layers");
  ASSERT_LT(at, sweep_csv_columns().size());
  auto cell = [&](std::optional<std::int64_t> mtp) {
    p.mtp_num_layers = mtp;
    return split_csv_line(priced_row(p)).at(at);
  };
  EXPECT_EQ(cell(std::nullopt), "");
  EXPECT_EQ(cell(0), "0");
  EXPECT_EQ(cell(1), "1");
}

// Plans that differ only in their distributed-optimizer instances write different rows, and
// their labels tell them apart (blank and unlabelled for one instance).
TEST(SweepRow, DistributedOptimizerInstancesHaveAColumnAndALabel) {
  Plan p = small_sweep_plan();
  const auto at = csv_column("num_distributed_optimizer_instances");
  ASSERT_LT(at, sweep_csv_columns().size());
  const std::string one = priced_row(p);
  p.num_distributed_optimizer_instances = 2;
  const std::string two = priced_row(p);
  EXPECT_EQ(split_csv_line(one).at(at), "");
  EXPECT_EQ(split_csv_line(two).at(at), "2");
  EXPECT_EQ(sweep_entries({one}).at(0).plan, "tp 1 pp 1 dp 8 mbs 1 1f1b zero 1");
  EXPECT_EQ(sweep_entries({two}).at(0).plan, "tp 1 pp 1 dp 8 mbs 1 1f1b zero 1 x 2 instances");
}

// Plans whose labels would read alike, differing only in a field the label leaves out, each name
// that field; a plan alone, or beside plans of other labels, keeps its plain label.
TEST(SweepSummary, PlansThatWouldReadAlikeNameWhatDiffers) {
  Plan p = small_sweep_plan();
  const std::string flash = priced_row(p);
  p.attention_backend = AttentionBackend::kUnfused;
  const std::string unfused = priced_row(p);
  p.attention_backend = AttentionBackend::kFlash;
  p.dp = 4;
  p.tp = 2;
  p.sp = true;
  const std::string tp2 = priced_row(p);
  const std::string plain = "tp 1 pp 1 dp 8 mbs 1 1f1b zero 1";
  const auto both = sweep_entries({flash, unfused, tp2});
  EXPECT_EQ(both.at(0).plan, plain + " attention-backend flash");
  EXPECT_EQ(both.at(1).plan, plain + " attention-backend unfused");
  EXPECT_EQ(both.at(2).plan, "tp 2 pp 1 dp 4 sp mbs 1 1f1b zero 1");  // its etp is 2, not 1
  EXPECT_EQ(sweep_entries({flash, tp2}).at(0).plan, plain);
  EXPECT_EQ(sweep_entries({unfused}).at(0).plan, plain);
}

TEST(SweepRow, DeferredLmHeadWeightGradientsHaveColumnsAndALabel) {
  Plan p = small_sweep_plan();
  p.pp = 2;
  p.dp = 4;
  const auto defer = csv_column("defer_embedding_wgrad_compute");
  const auto limit = csv_column("wgrad_deferral_limit");
  ASSERT_LT(limit, sweep_csv_columns().size());
  const std::string off = priced_row(p);
  p.defer_embedding_wgrad_compute = true;
  p.wgrad_deferral_limit = 4;
  const std::string on = priced_row(p);
  EXPECT_EQ(split_csv_line(off).at(defer), "");
  EXPECT_EQ(split_csv_line(on).at(defer), "true");
  EXPECT_EQ(split_csv_line(on).at(limit), "4");
  EXPECT_EQ(sweep_entries({off}).at(0).plan, "tp 1 pp 2 dp 4 mbs 1 1f1b zero 1");
  EXPECT_EQ(sweep_entries({on}).at(0).plan, "tp 1 pp 2 dp 4 mbs 1 1f1b zero 1 defer-wgrad 4");
}

TEST(SweepRow, RefusedByMemoryWithItsPeak) {
  const Model m = test::catalog_model("llama3.1-70b");
  Plan p;
  p.dp = 8;
  p.gbs = 64;
  p.seq_len = 4096;
  const SweepRow row = evaluate_sweep_plan(m, test::catalog_platform("h100-sxm-ndr"), p, 0);
  EXPECT_EQ(row.status, SweepStatus::kMemory);
  ASSERT_TRUE(row.peak_bytes);
  EXPECT_GT(*row.peak_bytes, 80.0 * (1 << 30));
  EXPECT_TRUE(row.reason.starts_with("does not fit: peak ")) << row.reason;
  EXPECT_EQ(row.reason.find("tight"), std::string::npos) << row.reason;
}

// Llama 3.1 8B with ZeRO-1 on 8 GPUs: 81.38 GiB with the 5 % fragmentation the platform assumes,
// under 80 GiB without. A sweep keeps the margin (refused) and says the plan is tight, with the
// peak the oom warning gives.
TEST(SweepRow, RefusedOnlyByTheAssumedFragmentationSaysTight) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan p;
  p.dp = 8;
  p.gbs = 64;
  p.seq_len = 4096;
  p.zero = 1;
  const SweepRow row = evaluate_sweep_plan(m, pf, p, 0);
  EXPECT_EQ(row.status, SweepStatus::kMemory);
  const Partition part = build_partition(m, pf, p);
  const MemoryModel mm = compute_memory(m, pf, p, part, compute_costs(m, pf, p, part));
  ASSERT_FALSE(mm.fits());
  ASSERT_TRUE(mm.fits_unfragmented());
  EXPECT_EQ(row.reason, "does not fit: peak " + format_bytes(mm.stages[0].peak_bytes) +
                            " per GPU, the GPU has 80.00 GiB (tight: " +
                            format_bytes(mm.stages[0].peak_unfragmented_bytes) +
                            " without the allocator fragmentation the platform assumes)");
}

TEST(SweepCsv, QuotedFieldsSplitBack) {
  EXPECT_EQ(split_csv_line(R"(1,"a, b","say ""x""",)"),
            (std::vector<std::string>{"1", "a, b", "say \"x\"", ""}));
}

// A priced plan as the summary reads it back: its index, GPUs and tokens/s (steps of one second).
SweepEntry priced_entry(std::int64_t index, std::int64_t gpus, double tokens_per_s) {
  SweepEntry e;
  e.index = index;
  e.gpus = gpus;
  e.status = "ok";
  e.step_s = 1;
  e.tokens_per_s = tokens_per_s;
  return e;
}

TEST(SweepSummary, ParetoFrontKeepsOnlyWhatMoreGpusBuy) {
  const auto entry = [](std::int64_t index, std::int64_t gpus, double step) {
    SweepEntry e = priced_entry(index, gpus, 1e6 / step);  // one global batch
    e.step_s = step;
    return e;
  };
  std::vector<SweepEntry> all = {entry(0, 64, 10), entry(1, 64, 8),  entry(2, 128, 9),
                                 entry(3, 128, 5), entry(4, 256, 6), entry(5, 512, 3)};
  const auto front = pareto_front(all);
  ASSERT_EQ(front.size(), 3u);
  EXPECT_EQ(front[0].index, 1);
  EXPECT_EQ(front[1].index, 3);
  EXPECT_EQ(front[2].index, 5);  // 256 GPUs buy nothing over 128
}

// With a failure model the plans rank by tokens/s less what failures take: 1,024 GPUs at
// 1,800,000 tokens/s losing 3 % leave 1,746,000; 2,048 at 2,000,000 losing 12 % leave 1,760,000
// and rank first; losing 20 % they leave 1,600,000, rank second and buy nothing on the Pareto
// front. The days column holds the days with failures.
TEST(SweepSummary, FailuresRankByTheThroughputTheyLeave) {
  const auto entry = [](std::int64_t index, std::int64_t gpus, double tokens_per_s, double lost) {
    SweepEntry e = priced_entry(index, gpus, tokens_per_s);
    e.days = "10.000";
    e.days_with_failures = format_fixed(10 / (1 - lost), 3);
    e.lost_to_failures = lost;
    return e;
  };
  const std::vector<SweepEntry> mild = {entry(0, 1024, 1.8e6, 0.03), entry(1, 2048, 2e6, 0.12)};
  EXPECT_EQ(ranked(mild)[0].index, 1);
  EXPECT_EQ(pareto_front(mild).size(), 2u);
  const std::vector<SweepEntry> harsh = {entry(0, 1024, 1.8e6, 0.03), entry(1, 2048, 2e6, 0.20)};
  EXPECT_EQ(ranked(harsh)[0].index, 0);
  ASSERT_EQ(pareto_front(harsh).size(), 1u);
  EXPECT_EQ(pareto_front(harsh)[0].index, 0);
  const std::string text = sweep_summary(harsh, 2);
  EXPECT_NE(text.find("fastest 2 plans (tokens/s less what failures take):\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("days+fail   lost  plan\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  12.500  20.0%"), std::string::npos) << text;  // 10 days / (1 - 0.2)
  EXPECT_NE(text.find("throughput with failures):\n"), std::string::npos) << text;
  // Without a GPU MTBF the table is as before.
  std::vector<SweepEntry> plain = harsh;
  for (auto& e : plain) {
    e.days_with_failures.clear();
    e.lost_to_failures = 0;
  }
  EXPECT_EQ(ranked(plain)[0].index, 1);
  EXPECT_EQ(sweep_summary(plain, 2).find("lost"), std::string::npos);
}

// A deadline keeps the plans whose days (with failures where given) fit in it and orders them by
// the GPU-hours they spend, then by days: 64 GPUs for 90 days (138,240 GPU-hours) beat 128 GPUs
// for 50 (153,600), and a plan that never finishes or misses the deadline is left out.
TEST(SweepSummary, ADeadlineListsTheCheapestPlansThatMeetIt) {
  const auto entry = [](std::int64_t index, std::int64_t gpus, double days, bool failures) {
    SweepEntry e = priced_entry(index, gpus, 1e6 / days);
    e.days = format_fixed(failures ? days * 0.9 : days, 3);
    e.gpu_hours = format_fixed(24 * gpus * (failures ? days * 0.9 : days), 0);
    if (failures) {
      e.days_with_failures = format_fixed(days, 3);
      e.lost_to_failures = 0.1;
      e.gpu_hours_with_failures = format_fixed(24 * gpus * days, 0);
    }
    return e;
  };
  for (const bool failures : {false, true}) {
    std::vector<SweepEntry> all = {entry(0, 128, 50, failures), entry(1, 64, 90, failures),
                                   entry(2, 32, 170, failures), entry(3, 64, 90, failures)};
    const auto cheap = cheapest_within(all, 100);
    ASSERT_EQ(cheap.size(), 3u);
    EXPECT_EQ(cheap[0].index, 1);  // 138,240 GPU-hours, then its twin by index
    EXPECT_EQ(cheap[1].index, 3);
    EXPECT_EQ(cheap[2].index, 0);  // 153,600
    const std::string text = sweep_summary(all, 2, 100);
    EXPECT_NE(text.find(std::string("cheapest 2 plans within 100 days (GPU-hours") +
                        (failures ? " with failures" : "") + "; 3 finish in time):\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("      138,240  "), std::string::npos) << text;
    EXPECT_NE(sweep_summary(all, 2, 40)
                  .find("no plan finishes within 40 days; the fastest takes "
                        "50.000 days\n"),
              std::string::npos);
  }
  // Plans on several platforms, each with its price: the cheapest are those of least cost (a
  // GPU-hour costs what its platform's does), and each label names its platform.
  std::vector<SweepEntry> priced = {entry(0, 64, 90, false), entry(1, 64, 80, false)};
  priced[0].platform = "h100";
  priced[0].cost = format_fixed(2.0 * priced[0].gpu_hours_spent(), 0);
  priced[1].platform = "h200";
  priced[1].cost = format_fixed(3.0 * priced[1].gpu_hours_spent(), 0);
  const auto by_cost = cheapest_within(priced, 100);
  ASSERT_EQ(by_cost.size(), 2u);
  EXPECT_EQ(by_cost[0].index, 0);  // 276,480 against 368,640, though it spends more GPU-hours
  EXPECT_NE(sweep_summary(priced, 2, 100)
                .find("cheapest 2 plans within 100 days (cost; 2 finish in time):\n"),
            std::string::npos);
  // A plan whose job never finishes has no days to meet a deadline with.
  SweepEntry never = entry(0, 16384, 10, true);
  never.days_with_failures = "inf";
  never.gpu_hours_with_failures = "inf";
  never.lost_to_failures = 1;
  EXPECT_TRUE(cheapest_within({never}, 1e6).empty());
  EXPECT_NE(sweep_summary({never}, 2, 30)
                .find("no plan finishes within 30 days: failures stop every plan before it ends\n"),
            std::string::npos);
  // Without a token budget there are no days at all.
  SweepEntry unbudgeted = entry(0, 64, 10, false);
  unbudgeted.days.clear();
  unbudgeted.gpu_hours.clear();
  EXPECT_NE(
      sweep_summary({unbudgeted}, 2, 30)
          .find(
              "no days to hold to the deadline (within 30 days): the sweep has no token budget\n"),
      std::string::npos);
}

}  // namespace
}  // namespace trainsim
