#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "sim/engine/engine.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/graph/builder.hpp"
#include "sim/graph/graph_json.hpp"
#include "sim/plan/partition.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

struct Counts {
  int compute = 0, tp = 0, dp = 0, p2p = 0;
};

Counts count(const RankProgram& r) {
  Counts c;
  for (const auto& op : r.ops) {
    if (op.type == OpType::kCompute) ++c.compute;
    if (op.type == OpType::kP2P) ++c.p2p;
    if (op.type == OpType::kCollective) ++(op.comm == CommKind::kTP ? c.tp : c.dp);
  }
  return c;
}

TaskGraph small_graph(ScheduleKind schedule) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.dp = 2;
  p.gbs = 8;
  p.seq_len = 2048;
  p.schedule = schedule;
  const auto part = test::uniform_partition(m, 2);
  return build_task_graph(p, compute_costs(m, test::catalog_platform("h100-sxm-ndr"), p, part));
}

TEST(TaskGraph, PerRankOperations) {
  const TaskGraph g = small_graph(ScheduleKind::k1F1B);
  ASSERT_EQ(g.num_ranks(), 8);
  // 2 stages x 2 replicas TP groups, 2 stages x 2 TP ranks DP groups.
  EXPECT_EQ(g.groups.size(), 8u);
  for (const auto& r : g.ranks) {
    const Counts c = count(r);
    EXPECT_EQ(c.compute, 2 * 4 + 1);  // forward and backward of 4 micro-batches, optimizer
    // One merged TP all-reduce op per pass: the forward's after the pass (the embedding's with
    // the decoders'), the backward's beside it (the LM head's input gradient with the decoders').
    EXPECT_EQ(c.tp, 2 * 4);
    EXPECT_EQ(c.dp, 1);
  }
  // Stage 0 of 2, m = 4: [s:a0] then 3 of [s:a r:g] then 1 of [r:g] => 5 exchanges.
  EXPECT_EQ(count(g.ranks[0]).p2p, 5);
  EXPECT_EQ(g.ranks[0].stage, 0);
  EXPECT_EQ(g.ranks[4].stage, 1);
  // Rank 1 (tp 1, dp 0, stage 0) sends its activations to rank 5 (tp 1, dp 0, stage 1).
  EXPECT_EQ(g.ranks[1].transfers[0].peer, 5);
  EXPECT_NO_THROW(check_task_graph(g));
}

// With the pipeline exchanges on their own streams (the interleaved schedule), a pass's output
// is sent once its compute op is done, not once the TP reductions it runs beside its weight
// gradients are: those are its layers' calls lumped into one op from the pass's start, which
// ends long before the pass's output (the gradient of its first layer) exists.
TEST(TaskGraph, SendsWaitForTheirPassesComputeNotTheCallsBesideIt) {
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.vp = 2;
  p.dp = 2;
  p.gbs = 8;
  p.seq_len = 2048;
  p.schedule = ScheduleKind::kInterleaved;
  const Partition part = build_partition(m, platform, p);
  const TaskGraph g = build_task_graph(p, compute_costs(m, platform, p, part));
  int sends = 0;
  for (const auto& r : g.ranks) {
    for (const auto& op : r.ops) {
      if (op.type != OpType::kP2P || op.num_sends == 0) continue;
      ++sends;
      bool after_compute = false;
      for (std::uint32_t i = 0; i < op.num_deps; ++i) {
        const Op& dep = r.ops[r.deps[op.first_dep + i]];
        // The pass's compute op, or a call after it on the compute stream.
        after_compute =
            after_compute || (dep.stream == Stream::kCompute && dep.microbatch == op.microbatch);
      }
      EXPECT_TRUE(after_compute) << "rank stage " << r.stage << " send of micro-batch "
                                 << op.microbatch;
    }
  }
  EXPECT_GT(sends, 0);
}

TEST(TaskGraph, JsonRoundTrip) {
  const TaskGraph g = small_graph(ScheduleKind::kGPipe);
  const auto j = task_graph_to_json(g);
  const TaskGraph back = task_graph_from_json(j, "g.json");
  EXPECT_EQ(task_graph_to_json(back), j);
  EXPECT_EQ(back.num_ops(), g.num_ops());
}

// A group's dimension survives the round trip; without one it is its kind's own; one whose
// traffic is another kind is refused at its JSON path.
TEST(TaskGraph, JsonGroupDimension) {
  TaskGraph g = test::collective_graph(4, {0, 1, 2, 3}, CollectiveKind::kAllReduce, 1e6);
  g.groups[0].dim = Dim::kInterEDP;
  auto j = task_graph_to_json(g);
  EXPECT_EQ(j.at("groups").at(0).at("dim"), "inter-edp");
  EXPECT_EQ(task_graph_from_json(j, "g.json").groups.at(0).dim, Dim::kInterEDP);
  j["groups"][0].erase("dim");
  EXPECT_EQ(task_graph_from_json(j, "g.json").groups.at(0).dim, Dim::kDP);
  j["groups"][0]["dim"] = "etp";
  try {
    task_graph_from_json(j, "g.json");
    ADD_FAILURE() << "an etp group carrying dp traffic was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("$.groups[0].dim"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("etp groups carry tp traffic, not dp"), std::string::npos)
        << e.what();
  }
}

// Every kind of compute op round-trips; a wait names the traffic it waits for.
TEST(TaskGraph, JsonComputeKindsAndWaits) {
  TaskGraph g;
  g.ranks.resize(1);
  for (const ComputeKind kind :
       {ComputeKind::kForward, ComputeKind::kBackwardInput, ComputeKind::kBackwardWeight,
        ComputeKind::kRecompute, ComputeKind::kWait}) {
    Op op;
    op.compute = kind;
    op.seconds = 1e-3;
    op.comm = kind == ComputeKind::kWait ? CommKind::kEP : CommKind::kTP;
    g.ranks[0].ops.push_back(op);
  }
  auto j = task_graph_to_json(g);
  EXPECT_EQ(j.at("ranks").at(0).at("ops").at(4).at("kind"), "wait");
  EXPECT_EQ(j.at("ranks").at(0).at("ops").at(4).at("comm"), "ep");
  EXPECT_FALSE(j.at("ranks").at(0).at("ops").at(0).contains("comm"));
  const TaskGraph back = task_graph_from_json(j, "g.json");
  ASSERT_EQ(back.ranks.at(0).ops.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(back.ranks[0].ops[i].compute, g.ranks[0].ops[i].compute);
  }
  EXPECT_EQ(back.ranks[0].ops[4].comm, CommKind::kEP);
  j["ranks"][0]["ops"][4].erase("comm");
  EXPECT_THROW(task_graph_from_json(j, "g.json"), std::exception);
}

TEST(TaskGraph, MismatchedTransfersAreRejected) {
  TaskGraph g = test::transfers_graph(2, {{0, 1}}, 1e6);
  g.ranks[1].ops.clear();
  EXPECT_THROW(check_task_graph(g), std::invalid_argument);
  TaskGraph c = test::collective_graph(4, {0, 1, 2}, CollectiveKind::kAllReduce, 1e6);
  c.ranks[2].ops.clear();
  EXPECT_THROW(check_task_graph(c), std::invalid_argument);
  // A rank outside the group calling it.
  TaskGraph outsider = test::collective_graph(4, {0, 1, 2}, CollectiveKind::kAllReduce, 1e6);
  outsider.ranks[3].ops.push_back(outsider.ranks[0].ops.front());
  EXPECT_NO_THROW(
      check_task_graph(test::collective_graph(4, {0, 1, 2}, CollectiveKind::kAllReduce, 1e6)));
  EXPECT_THROW(check_task_graph(outsider), std::invalid_argument);
}

// A NaN, infinite or negative time or size never reaches a replay.
TEST(TaskGraph, NonFiniteDurationsAndSizesAreRejected) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const double bad : {nan, std::numeric_limits<double>::infinity(), -1.0}) {
    TaskGraph c = test::collective_graph(4, {0, 1, 2, 3}, CollectiveKind::kAllReduce, 1e6);
    EXPECT_NO_THROW(check_task_graph(c));
    c.ranks[1].ops.front().bytes = bad;
    EXPECT_THROW(check_task_graph(c), std::invalid_argument) << bad;
    TaskGraph t = test::transfers_graph(2, {{0, 1}}, 1e6);
    t.ranks[0].transfers.front().bytes = bad;
    EXPECT_THROW(check_task_graph(t), std::invalid_argument) << bad;
    TaskGraph g = small_graph(ScheduleKind::kGPipe);
    g.ranks[0].ops.front().seconds = bad;
    EXPECT_THROW(check_task_graph(g), std::invalid_argument) << bad;
  }
}

TEST(Ring, BytesAndSteps) {
  EXPECT_DOUBLE_EQ(ring_bytes(CollectiveKind::kAllReduce, 800, 8), 1400);
  EXPECT_DOUBLE_EQ(ring_bytes(CollectiveKind::kAllGather, 800, 8), 700);
  EXPECT_EQ(ring_steps(CollectiveKind::kAllReduce, 8), 14);
  EXPECT_EQ(ring_steps(CollectiveKind::kReduceScatter, 8), 7);
}

// --fp8-param-gather: the distributed optimizer all-gathers the decoder's GEMM weights in FP8
// (1 byte each), the rest (embedding, LM head, norms) in BF16. On Llama 3.1 8B over 2 stages
// the gathered bytes per rank drop by the stage's GEMM parameters.
TEST(TaskGraph, Fp8ParamGatherHalvesTheGemmWeights) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p;
  p.pp = 2;
  p.dp = 4;
  p.gbs = 8;
  p.seq_len = 2048;
  p.zero = 1;
  p.overlap_grad_reduce = p.overlap_param_gather = true;
  p.precision = Precision::kFP8;
  const auto part = test::uniform_partition(m, 2);
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const CostModel costs = compute_costs(m, pf, p, part);
  const auto gathered = [&](const Plan& plan) {
    const TaskGraph g = build_task_graph(plan, costs);
    double bytes = 0;
    for (const auto& op : g.ranks[0].ops) {
      if (op.type == OpType::kCollective && op.comm == CommKind::kDP &&
          op.collective == CollectiveKind::kAllGather) {
        bytes += op.bytes;
      }
    }
    return bytes;
  };
  const double bf16 = gathered(p);
  EXPECT_NEAR(bf16, 2.0 * static_cast<double>(costs.stages[0].params_per_gpu), 1e-9 * bf16);
  p.fp8_param_gather = true;
  EXPECT_NEAR(gathered(p), bf16 - static_cast<double>(costs.stages[0].gemm_params_per_gpu),
              1e-9 * bf16);
  // 16 layers of 4096 x (4096 + 2 x 1024) + 4096 x 4096 + 3 x 4096 x 14336 GEMM weights.
  EXPECT_EQ(costs.stages[0].gemm_params_per_gpu,
            16 * (4096LL * 6144 + 4096LL * 4096 + 3LL * 4096 * 14336));
}

}  // namespace
}  // namespace trainsim
