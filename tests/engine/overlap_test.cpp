// Communication overlapped with compute and recomputation in the timeline, against closed forms.
// SimGrid allows one simulation per process; ctest runs every TEST in a process of its own.
#include <gtest/gtest.h>

#include "sim/collective/group_collectives.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/builder.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

constexpr auto kDP = static_cast<std::size_t>(CommKind::kDP);

// One stage, two data-parallel replicas on one NVSwitch, m micro-batches of tf + tb, and 160M
// parameters per GPU: with --overlap-grad-reduce Megatron-Core's buckets of max(40M, 1M x dp)
// parameters make 4 buckets of 160 MB of fp32 gradients.
struct DpCase {
  double tf = 1e-3;
  double tb = 4e-3;
  std::int64_t m = 2;
  bool overlap = true;
};

constexpr std::int64_t kParams = 160'000'000;

Plan dp_plan(const DpCase& c) {
  Plan plan;
  plan.dp = 2;
  plan.gbs = 2 * c.m;
  plan.seq_len = 1;
  plan.overlap_grad_reduce = c.overlap;
  return plan;
}

TaskGraph dp_graph(const DpCase& c) {
  CostModel costs = test::uniform_costs(1, c.tf, c.tb);
  costs.stages[0].params_per_gpu = kParams;
  costs.stages[0].grad_bytes = static_cast<double>(kParams) * kGradReduceBytes;
  return build_task_graph(dp_plan(c), costs);
}

const Topology& nvswitch() {
  static const Topology topo(test::simple_platform(450, 0, 50, 0), 2);
  return topo;
}

// One bucket's all-reduce over the two GPUs.
double bucket_seconds() {
  const double bucket = static_cast<double>(kParams) * kGradReduceBytes / 4.0;
  return GroupCollectives(nvswitch(), {0, 1}).choose(CollectiveKind::kAllReduce, bucket, 1).seconds;
}

TEST(DpOverlap, BucketsAreMegatronCores) {
  EXPECT_EQ(grad_bucket_params(2), 40'000'000);
  EXPECT_EQ(grad_bucket_params(64), 64'000'000);
  // Without overlap the whole buffer is one bucket, reduced by one collective after the
  // backward; with it, one collective per bucket.
  for (bool overlap : {false, true}) {
    DpCase c;
    c.overlap = overlap;
    const TaskGraph g = dp_graph(c);
    int dp_ops = 0;
    for (const auto& op : g.ranks[0].ops) {
      if (op.type == OpType::kCollective && op.comm == CommKind::kDP) {
        ++dp_ops;
        EXPECT_EQ(op.stream, overlap ? Stream::kDP : Stream::kCompute);
      }
    }
    EXPECT_EQ(dp_ops, overlap ? 4 : 1);
  }
}

TEST(DpOverlap, HiddenWhileEachBucketFitsInTheNextBucketsBackward) {
  // Bucket k's reduction runs while the backward computes bucket k + 1's gradients (tb / 4):
  // only the last bucket, ready when the backward ends, is exposed.
  DpCase c;
  const double bucket = bucket_seconds();
  ASSERT_LT(bucket, c.tb / 4);
  const SimResult r = simulate_analytic(dp_graph(c), nvswitch());
  const double compute = static_cast<double>(c.m) * (c.tf + c.tb);
  EXPECT_NEAR(r.step_time_s, compute + bucket, 1e-12);
  EXPECT_NEAR(r.ranks[0].comm_s[kDP], bucket, 1e-12);
  EXPECT_NEAR(r.ranks[0].comm_hidden_s[kDP], 3 * bucket, 1e-12);

  // Not overlapped: one all-reduce of the whole buffer after the backward, all of it exposed.
  c.overlap = false;
  const SimResult serial = simulate_analytic(dp_graph(c), nvswitch());
  EXPECT_NEAR(serial.step_time_s, compute + 4 * bucket, 1e-12);
  EXPECT_NEAR(serial.ranks[0].comm_s[kDP], 4 * bucket, 1e-12);
}

TEST(DpOverlap, ExposedOnceBucketsNoLongerFit) {
  // With tb / 4 < one bucket's reduction the DP stream falls behind: the last reduction ends
  // n c - (n - 1) tb / n after the backward.
  DpCase c;
  c.tb = 0.4e-3;
  const double bucket = bucket_seconds();
  const double d = c.tb / 4;
  ASSERT_GT(bucket, d);
  const SimResult r = simulate_analytic(dp_graph(c), nvswitch());
  const double compute = static_cast<double>(c.m) * (c.tf + c.tb);
  EXPECT_NEAR(r.step_time_s, compute + 4 * bucket - 3 * d, 1e-12);
  EXPECT_NEAR(r.ranks[0].comm_s[kDP], 4 * bucket - 3 * d, 1e-12);
}

TEST(DpOverlap, SimGridAgreesAndAppliesTheComputeSlowdown) {
  // Compute concurrent with a transfer runs at 1 - f of its speed: each of the 3 backward
  // pieces that overlap a bucket's reduction takes f x c longer.
  DpCase c;
  const double bucket = bucket_seconds();
  const double f = 0.5;
  ASSERT_LT((1 - f) * bucket, c.tb / 4);
  EngineOptions options;
  options.compute_slowdown = f;
  const SimResult r = simulate_simgrid(dp_graph(c), nvswitch(), options);
  const double compute = static_cast<double>(c.m) * (c.tf + c.tb);
  EXPECT_NEAR(r.step_time_s, compute + 3 * f * bucket + bucket, 1e-9);
}

TEST(DpOverlap, AnalyticAppliesTheComputeSlowdownToFirstOrder) {
  // The analytic engine stretches each compute op by f x its overlap with communication (found
  // by a first replay): the same closed form as SimGrid's exact sharing when, as here, the
  // overlap does not change with the stretch.
  DpCase c;
  const double bucket = bucket_seconds();
  const double f = 0.5;
  EngineOptions options;
  options.compute_slowdown = f;
  const SimResult r = simulate_analytic(dp_graph(c), nvswitch(), options);
  const double compute = static_cast<double>(c.m) * (c.tf + c.tb);
  EXPECT_NEAR(r.step_time_s, compute + 3 * f * bucket + bucket, 1e-12);
  EXPECT_NEAR(r.ranks[0].comm_hidden_s[kDP], 3 * bucket, 1e-12);
}

TEST(DpOverlap, SimGridWithoutSlowdownMatchesTheClosedForm) {
  DpCase c;
  c.tb = 0.4e-3;
  const double bucket = bucket_seconds();
  const SimResult r = simulate_simgrid(dp_graph(c), nvswitch());
  EXPECT_NEAR(r.step_time_s, static_cast<double>(c.m) * (c.tf + c.tb) + 4 * bucket - 3 * c.tb / 4,
              1e-9);
}

TEST(DpOverlap, ParameterGatherHiddenBehindTheFirstForward) {
  // Distributed optimizer: gradients reduce-scattered, BF16 parameters all-gathered. With
  // --overlap-param-gather only the first bucket's gather delays the first forward; without it,
  // the whole gather follows the optimizer step.
  DpCase c;
  Plan plan = dp_plan(c);
  plan.zero = 1;
  CostModel costs = test::uniform_costs(1, c.tf, c.tb);
  costs.stages[0].params_per_gpu = kParams;
  costs.stages[0].grad_bytes = static_cast<double>(kParams) * kGradReduceBytes;
  const GroupCollectives dp(nvswitch(), {0, 1});
  const double rs =
      dp.choose(CollectiveKind::kReduceScatter, costs.stages[0].grad_bytes / 4, 1).seconds;
  const double ag =
      dp.choose(CollectiveKind::kAllGather, static_cast<double>(kParams) * 2.0 / 4, 1).seconds;
  ASSERT_LT(ag, c.tf / 4);
  const double compute = static_cast<double>(c.m) * (c.tf + c.tb);
  plan.overlap_param_gather = true;
  const SimResult hidden = simulate_analytic(build_task_graph(plan, costs), nvswitch());
  EXPECT_NEAR(hidden.step_time_s, compute + ag + rs, 1e-12);
  EXPECT_NEAR(hidden.ranks[0].comm_hidden_s[kDP], 3 * ag + 3 * rs, 1e-12);
  plan.overlap_param_gather = false;
  const SimResult after = simulate_analytic(build_task_graph(plan, costs), nvswitch());
  EXPECT_NEAR(after.step_time_s, compute + rs + 4 * ag, 1e-12);
}

TEST(DpOverlap, TpCollectivesSpreadOverTheGatheredForwardsPieces) {
  // The first forward runs in one piece per parameter bucket (4 here), each waiting for its
  // bucket's gather; with --tp-comm-overlap each piece carries its share of the pass's TP calls
  // (8 all-reduces: 2 per piece), not the last piece all of them.
  DpCase c;
  Plan plan = dp_plan(c);
  plan.tp = 2;
  plan.zero = 1;
  plan.overlap_param_gather = true;
  plan.tp_comm_overlap = true;
  CostModel costs = test::uniform_costs(1, c.tf, c.tb);
  costs.stages[0].params_per_gpu = kParams;
  costs.stages[0].grad_bytes = static_cast<double>(kParams) * kGradReduceBytes;
  costs.stages[0].forward.collectives.push_back({CollectiveKind::kAllReduce, Dim::kTP, 8 * 1e6, 8});
  const TaskGraph g = build_task_graph(plan, costs);
  std::vector<std::int32_t> first_forward_calls;
  double bytes = 0;
  for (const Op& op : g.ranks[0].ops) {
    if (op.type == OpType::kCollective && op.comm == CommKind::kTP && op.microbatch == 0) {
      first_forward_calls.push_back(op.count);
      bytes += op.bytes;
    }
  }
  EXPECT_EQ(first_forward_calls, (std::vector<std::int32_t>{2, 2, 2, 2}));
  EXPECT_DOUBLE_EQ(bytes, 8e6);
}

// Recomputation: llama3.1-8b on 2 stages, 4 micro-batches.
struct Recomputed {
  CostModel costs;
  SimResult sim;
};

Recomputed run_recompute(Recompute recompute) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  Plan plan;
  plan.pp = 2;
  plan.gbs = 4;
  plan.seq_len = 4096;
  plan.recompute = recompute;
  Recomputed out;
  out.costs = compute_costs(m, pf, plan, test::uniform_partition(m, 2));
  EngineOptions options;
  options.keep_timelines = true;
  out.sim = simulate_analytic(build_task_graph(plan, out.costs), Topology(pf, 2), options);
  return out;
}

void expect_recompute_before_every_backward(Recompute kind) {
  const Recomputed none = run_recompute(Recompute::kNone);
  const Recomputed with = run_recompute(kind);
  for (std::size_t s = 0; s < 2; ++s) {
    const double extra = with.costs.stages[s].recompute.seconds;
    ASSERT_GT(extra, 0.0);
    // Every backward is preceded by its micro-batch's recomputation, of exactly that length.
    const auto& spans = with.sim.timelines[s];
    int backwards = 0;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      if (!spans[i].compute || spans[i].compute_kind != ComputeKind::kBackward) continue;
      ++backwards;
      ASSERT_GT(i, 0u);
      const Span& before = spans[i - 1];
      EXPECT_EQ(before.compute_kind, ComputeKind::kRecompute);
      EXPECT_EQ(before.microbatch, spans[i].microbatch);
      EXPECT_NEAR(before.end - before.start, extra, 1e-15);
      EXPECT_NEAR(before.end, spans[i].start, 1e-15);
    }
    EXPECT_EQ(backwards, 4);
    EXPECT_NEAR(with.sim.ranks[s].compute_s - none.sim.ranks[s].compute_s, 4 * extra, 1e-12);
  }
}

TEST(RecomputeTimeline, FullAddsTheLayersForwardBeforeEachBackward) {
  expect_recompute_before_every_backward(Recompute::kFull);
}

TEST(RecomputeTimeline, SelectiveAddsTheAttentionCoreBeforeEachBackward) {
  expect_recompute_before_every_backward(Recompute::kSelective);
}

}  // namespace
}  // namespace trainsim
