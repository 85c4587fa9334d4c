// Megatron-LM's --defer-embedding-wgrad-compute (and --wgrad-deferral-limit): the last stage
// leaves the LM head's weight-gradient GEMM of its first micro-batches to the pipeline flush,
// keeping each one's input and logits gradient until then. Megatron-LM's rules, the backward
// without that GEMM, the flush's op, the bytes kept, and the flags end to end.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/core/format.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/graph/builder.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/partition.hpp"
#include "sim/search/plan_space.hpp"
#include "sim/search/plan_text.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// llama3.1-8b, tp 2 without SP, pp 2, 1F1B, 8 micro-batches of 2,048 tokens.
Plan deferring_plan(std::int64_t limit, bool defer = true) {
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.gbs = 8;
  p.seq_len = 2048;
  p.defer_embedding_wgrad_compute = defer;
  p.wgrad_deferral_limit = limit;
  return p;
}

TEST(WgradDeferral, MegatronRulesOneLineEach) {
  const Model m = test::catalog_model("llama3.1-8b");
  EXPECT_EQ(test::plan_error(deferring_plan(2), m), "(valid)");
  EXPECT_EQ(test::plan_error(deferring_plan(0), m), "(valid)");
  EXPECT_EQ(test::plan_error(deferring_plan(2, false), m),
            "--wgrad-deferral-limit: needs --defer-embedding-wgrad-compute");
  Plan one_stage = deferring_plan(2);
  one_stage.pp = 1;
  EXPECT_EQ(test::plan_error(one_stage, m),
            "--defer-embedding-wgrad-compute: needs --pp 2 or more: the weight gradients run in "
            "the pipeline flush, which one stage does not have (Megatron-LM's rule)");
  Plan zb = deferring_plan(2);
  zb.schedule = ScheduleKind::kZBH1;
  EXPECT_EQ(test::plan_error(zb, m),
            "--defer-embedding-wgrad-compute: applies to Megatron-LM's 1f1b and interleaved "
            "schedules, not zb-h1");
  Plan nanotron = deferring_plan(2);
  nanotron.framework = Framework::kNanotron;
  EXPECT_EQ(test::plan_error(nanotron, m),
            "--defer-embedding-wgrad-compute: is Megatron-LM's; nanotron does not defer it");
  Model mtp = m;
  mtp.mtp_layers = 1;
  EXPECT_EQ(test::plan_error(deferring_plan(2), mtp),
            "--defer-embedding-wgrad-compute: with multi-token prediction is not modelled "
            "(Megatron-LM also defers each module's LM-head run, counting every run against the "
            "limit); use --mtp-num-layers 0 or leave the deferral out");
  EXPECT_EQ(deferring_plan(2).deferred_lm_head_wgrads(), 2);
  EXPECT_EQ(deferring_plan(0).deferred_lm_head_wgrads(), 8);  // 0: every micro-batch
  EXPECT_EQ(deferring_plan(20).deferred_lm_head_wgrads(), 8);
  EXPECT_EQ(deferring_plan(0, false).deferred_lm_head_wgrads(), 0);
}

struct Built {
  Partition partition;
  CostModel costs;
};

Built build(const Plan& p) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  Built b{build_partition(m, platform, p), {}};
  b.costs = compute_costs(m, platform, p, b.partition);
  return b;
}

// `trainsim run` on llama3.1-8b and h100-sxm-ndr with the analytic engine, then `flags`.
test::CommandResult run_8b(const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"run",          "--model",  "llama3.1-8b", "--platform",
                                   "h100-sxm-ndr", "--engine", "analytic"};
  args.insert(args.end(), flags.begin(), flags.end());
  return test::run_trainsim(args);
}

// The plan's memory per stage (llama3.1-8b on h100-sxm-ndr).
MemoryModel memory_of(const Plan& p) {
  const Built b = build(p);
  return compute_memory(test::catalog_model("llama3.1-8b"), test::catalog_platform("h100-sxm-ndr"),
                        p, b.partition, b.costs);
}

// The last stage's backward without the LM head's weight-gradient GEMM costs the whole backward
// less that GEMM's time (the input gradient's all-reduce beside it here is shorter than it and
// stalls nothing; that call then runs after the pass, vocab_ops_test.cpp); the first stage
// defers nothing.
TEST(WgradDeferral, TheBackwardLeavesTheLmHeadWeightGradientOut) {
  const Built b = build(deferring_plan(2));
  const StageCost& last = b.costs.stages[1];
  double wgrad = 0;
  for (const auto& k : last.backward.kernels) {
    if (k.name == "lm_head.lm_head.wgrad") wgrad += k.time.seconds * static_cast<double>(k.count);
  }
  ASSERT_GT(wgrad, 0);
  EXPECT_DOUBLE_EQ(last.lm_head_wgrad.seconds, wgrad);
  ASSERT_EQ(last.lm_head_wgrad.kernels.size(), 1u);
  EXPECT_NEAR(last.backward_deferring_lm_head_wgrad.seconds, last.backward.seconds - wgrad,
              1e-12 * last.backward.seconds);
  EXPECT_EQ(b.costs.stages[0].lm_head_wgrad.seconds, 0);
  // Without the flag, nothing is built.
  EXPECT_EQ(build(deferring_plan(0, false)).costs.stages[1].lm_head_wgrad.seconds, 0);
}

// The last stage's first two backwards run without the GEMM; after its last backward one op
// runs both micro-batches' GEMMs, before the optimizer step.
TEST(WgradDeferral, TheFlushRunsTheDeferredGemms) {
  const Plan p = deferring_plan(2);
  const Built b = build(p);
  const TaskGraph g = build_task_graph(p, b.costs);
  const StageCost& last = b.costs.stages[1];
  for (const auto& r : g.ranks) {
    std::vector<double> backwards;
    std::int64_t flush = -1, optimizer = -1, last_backward = -1;
    for (std::size_t i = 0; i < r.ops.size(); ++i) {
      const Op& op = r.ops[i];
      if (op.type != OpType::kCompute) continue;
      if (op.compute == ComputeKind::kBackward) {
        backwards.push_back(op.seconds);
        last_backward = static_cast<std::int64_t>(i);
      }
      if (op.compute == ComputeKind::kBackwardWeight) {
        EXPECT_EQ(op.microbatch, -1);
        EXPECT_DOUBLE_EQ(op.seconds, 2 * last.lm_head_wgrad.seconds);
        flush = static_cast<std::int64_t>(i);
      }
      if (op.compute == ComputeKind::kOptimizer) optimizer = static_cast<std::int64_t>(i);
    }
    ASSERT_EQ(backwards.size(), 8u);
    if (r.stage == 0) {
      EXPECT_EQ(flush, -1);
      continue;
    }
    for (std::size_t k = 0; k < 8; ++k) {
      EXPECT_DOUBLE_EQ(backwards[k], k < 2 ? last.backward_deferring_lm_head_wgrad.seconds
                                           : last.backward.seconds)
          << "backward " << k;
    }
    EXPECT_GT(flush, last_backward);
    EXPECT_LT(flush, optimizer);
  }
}

// Each deferring backward keeps the LM head's input (2,048 x 4,096 BF16) and the BF16 gradient
// of its logits (2,048 x 64,128 per TP rank: 128,256 words over tp 2) to the flush: the last
// stage's peak, reached in a later backward, holds two of them more; the first stage's and the
// model state after the step do not change.
TEST(WgradDeferral, TheLastStageKeepsTwoInputsAndLogitsGradients) {
  const MemoryModel with = memory_of(deferring_plan(2));
  const MemoryModel without = memory_of(deferring_plan(0, false));
  const double kept = 2.0 * 2048 * 4096 + 2.0 * 2048 * 64128;  // 279,445,504 bytes
  EXPECT_DOUBLE_EQ(with.stages[1].peak_allocated - without.stages[1].peak_allocated, 2 * kept);
  EXPECT_DOUBLE_EQ(with.stages[0].peak_allocated, without.stages[0].peak_allocated);
  EXPECT_DOUBLE_EQ(with.stages[1].base(), without.stages[1].base());
  // Deferring every micro-batch's: the flush holds all eight.
  const MemoryModel all = memory_of(deferring_plan(0));
  EXPECT_GE(all.stages[1].peak_allocated - without.stages[1].base(), 8 * kept);
}

// A fix without a pipeline (or on zb-h1) is priced without the deferral, and its text says so.
TEST(WgradDeferral, AFixThatCannotDeferDropsItAndSaysSo) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  const Plan plan = deferring_plan(2);
  PlanSpace space(m, platform, plan, build_partition(m, platform, plan));
  Candidate one_stage{plan};
  one_stage.plan.pp = 1;
  one_stage.plan.dp = 2;
  const Outcome o = space.price(one_stage);
  ASSERT_TRUE(o) << o.reason();
  EXPECT_FALSE(o->plan.defer_embedding_wgrad_compute);
  EXPECT_EQ(o->plan.wgrad_deferral_limit, 0);
  EXPECT_EQ(plan_changes(plan, o->plan), "--pp 1 --dp 2 without --defer-embedding-wgrad-compute");
  Candidate zb{plan};
  zb.plan.schedule = ScheduleKind::kZBH1;
  const Outcome z = space.price(zb);
  ASSERT_TRUE(z) << z.reason();
  EXPECT_FALSE(z->plan.defer_embedding_wgrad_compute);
  // A candidate that can defer keeps it.
  Candidate interleaved{plan};
  interleaved.plan.schedule = ScheduleKind::kInterleaved;
  interleaved.plan.vp = 2;
  const Outcome i = space.price(interleaved);
  ASSERT_TRUE(i) << i.reason();
  EXPECT_TRUE(i->plan.defer_embedding_wgrad_compute);
}

// Deferring all 256 micro-batches' GEMMs, the last stage's peak (at its last backward) holds
// 255 inputs and logits gradients beside its state: out of memory. The diagnostic names those
// bytes; its fix first lowers the limit to the largest that fits (the limit one above does not),
// then drops the deferral; the report carries the bytes apart.
TEST(WgradDeferral, AnOutOfMemoryFixLowersTheLimitToTheLargestThatFits) {
  const std::vector<std::string> plan = {"--tp",      "2",     "--pp",
                                         "2",         "--gbs", "256",
                                         "--seq-len", "2048",  "--defer-embedding-wgrad-compute"};
  auto json_flags = plan;
  json_flags.insert(json_flags.end(), {"--format", "json"});
  const auto r = run_8b(json_flags);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  const double kept = 2.0 * 2048 * 4096 + 2.0 * 2048 * 64128;
  const auto& last = report.at("stages").at(1).at("memory");
  EXPECT_EQ(last.at("deferred_microbatches"), 255);
  EXPECT_DOUBLE_EQ(last.at("deferred_lm_head_bytes").get<double>(), 255 * kept);
  EXPECT_FALSE(report.at("stages").at(0).at("memory").contains("deferred_lm_head_bytes"));
  std::string message, fix;
  for (const auto& d : report.at("diagnostics")) {
    if (d.at("id") == "oom") {
      message = d.at("message");
      fix = d.at("fix");
    }
  }
  EXPECT_NE(message.find("of LM-head buffers kept for 255 deferred weight gradients "
                         "(--defer-embedding-wgrad-compute)"),
            std::string::npos)
      << message;
  const std::string lower = "--wgrad-deferral-limit ";
  ASSERT_EQ(fix.rfind(lower, 0), 0u) << fix;
  const std::int64_t limit = std::stoll(fix.substr(lower.size()));
  EXPECT_NE(fix.find("; or without --defer-embedding-wgrad-compute (peak "), std::string::npos)
      << fix;
  auto fits = [](std::int64_t l) {
    Plan p = deferring_plan(l);
    p.gbs = 256;
    return memory_of(p).fits();
  };
  EXPECT_GT(limit, 1);
  EXPECT_LT(limit, 255);
  EXPECT_TRUE(fits(limit));
  EXPECT_FALSE(fits(limit + 1));
  // The HTML page says it under its memory table too.
  const std::string html = test::make_temp_dir() + "/report.html";
  auto html_flags = plan;
  html_flags.insert(html_flags.end(), {"--html", html});
  const auto page = run_8b(html_flags);
  ASSERT_EQ(page.exit_code, 0) << page.err;
  EXPECT_NE(test::read_file(html).find("Stage 1's activations at the peak include 66.36 GiB of "
                                       "LM-head inputs and logits gradients kept for 255 deferred "
                                       "weight gradients."),
            std::string::npos);
}

// Llama 3.1 8B on four stages: the last, with the LM head over 128,256 words, is the slowest.
// Besides the balanced partition, the stage-imbalance fix offers deferring the LM head's weight
// gradients to the flush, at the largest limit that fits (deferring all 32 micro-batches' does
// not), priced as a run with that limit.
TEST(WgradDeferral, AnImbalancedLastStageIsOfferedTheDeferralThatFits) {
  auto run = [](std::vector<std::string> extra) {
    std::vector<std::string> flags = {"--tp",  "1",  "--pp",      "4",    "--dp",     "2",
                                      "--gbs", "64", "--seq-len", "4096", "--format", "json"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    const auto r = run_8b(flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  std::string fix;
  const auto report = run({});
  for (const auto& d : report.at("diagnostics")) {
    if (d.at("id") == "stage-imbalance") {
      EXPECT_EQ(d.at("stage"), 3);
      fix = d.at("fix");
    }
  }
  const std::string offer = "; or --defer-embedding-wgrad-compute --wgrad-deferral-limit ";
  const auto at = fix.find(offer);
  ASSERT_NE(at, std::string::npos) << fix;
  EXPECT_EQ(fix.rfind("--partition balanced", 0), 0u) << fix;
  const std::int64_t limit = std::stoll(fix.substr(at + offer.size()));
  auto fits = [](std::int64_t l) {
    Plan p = deferring_plan(l);
    p.tp = 1;
    p.pp = 4;
    p.dp = 2;
    p.gbs = 64;
    p.seq_len = 4096;
    return memory_of(p).fits();
  };
  EXPECT_FALSE(fits(0));  // all 32
  EXPECT_TRUE(fits(limit));
  EXPECT_FALSE(fits(limit + 1));
  const double step =
      run({"--defer-embedding-wgrad-compute", "--wgrad-deferral-limit", std::to_string(limit)})
          .at("step_time_s");
  EXPECT_NE(fix.find("): step " + format_seconds(step) + " ("), std::string::npos) << fix;
}

// The flags end to end: the report echoes the plan fields and says it in words, and the trace
// names the flush's op.
TEST(WgradDeferral, FlagsReportAndTrace) {
  const std::string trace = test::make_temp_dir() + "/trace.json";
  const std::vector<std::string> flags = {"--tp",      "2",     "--pp",
                                          "2",         "--gbs", "8",
                                          "--seq-len", "2048",  "--defer-embedding-wgrad-compute"};
  auto json_flags = flags;
  json_flags.insert(json_flags.end(), {"--wgrad-deferral-limit", "2", "--format", "json"});
  const auto r = run_8b(json_flags);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto plan = nlohmann::json::parse(r.out).at("plan");
  EXPECT_EQ(plan.at("defer_embedding_wgrad_compute"), true);
  EXPECT_EQ(plan.at("wgrad_deferral_limit"), 2);
  auto text_flags = flags;
  text_flags.insert(text_flags.end(), {"--wgrad-deferral-limit", "2", "--trace", trace});
  const auto text = run_8b(text_flags);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("LM-head wgrad of 2 micro-batches deferred to the flush"),
            std::string::npos)
      << text.out;
  EXPECT_NE(test::read_file(trace).find("W deferred LM head (the pipeline flush)"),
            std::string::npos);
  const auto bad =
      test::run_trainsim({"run", "--model", "llama3.1-8b", "--platform", "h100-sxm-ndr", "--tp",
                          "2", "--pp", "2", "--seq-len", "2048", "--wgrad-deferral-limit", "2"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--wgrad-deferral-limit: needs --defer-embedding-wgrad-compute"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace trainsim
