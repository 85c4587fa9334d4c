// Several distributed-optimizer instances (Megatron-LM's --num-distributed-optimizer-instances):
// Megatron-LM's rules, where the intra- and inter-instance groups lie (as Megatron-Core's
// parallel_state builds them), the optimizer state sharded over an instance, and the gradient
// reduce-scatter within an instance followed by the all-reduce of its shards across instances.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/plan/layout.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

using Ranks = std::vector<std::int64_t>;

Plan instances_plan(std::int64_t dp, std::int64_t instances, std::int64_t cp = 1) {
  Plan p;
  p.tp = 2;
  p.sp = true;
  p.cp = cp;
  p.dp = dp;
  p.gbs = dp;
  p.seq_len = 8192;
  p.zero = 1;
  p.num_distributed_optimizer_instances = instances;
  return p;
}

TEST(OptimizerInstances, MegatronRulesOneLineEach) {
  const Model m = test::catalog_model("llama3.1-8b");
  EXPECT_EQ(test::plan_error(instances_plan(8, 2), m), "(valid)");
  EXPECT_EQ(test::plan_error(instances_plan(4, 4, 2), m), "(valid)");  // an instance: one CP pair
  Plan no_distopt = instances_plan(8, 2);
  no_distopt.zero = 0;
  EXPECT_EQ(test::plan_error(no_distopt, m),
            "--num-distributed-optimizer-instances: needs sharded data parallelism (--zero 1 to "
            "3, framework megatron): Megatron-LM's distributed optimizer, or hybrid sharding "
            "(HSDP) with --zero 3");
  EXPECT_EQ(test::plan_error(instances_plan(6, 4), m),
            "--num-distributed-optimizer-instances: must divide --dp (6): each instance holds "
            "dp / N whole data-parallel replicas, got 4");
  EXPECT_EQ(test::plan_error(instances_plan(4, 4), m),
            "--num-distributed-optimizer-instances: leaves one rank per instance (dp x cp = 4), "
            "which shards nothing: use --zero 0 to all-reduce the gradients, or fewer instances");
  Plan order = instances_plan(4, 2, 2);
  order.rank_order = *parse_rank_order("tp-dp-cp-ep-pp");
  EXPECT_EQ(test::plan_error(order, m),
            "--num-distributed-optimizer-instances: needs CP inside DP in --rank-order (as "
            "Megatron-LM's default tp-cp-ep-dp-pp) so that an instance holds whole "
            "context-parallel groups");
  // Mixtral, tp 2, dp 4, ep 4 (etp = tp): 8 ranks, expert data parallelism 8 / (2 x 4) = 1.
  Plan moe = instances_plan(4, 2);
  moe.ep = 4;
  EXPECT_EQ(test::plan_error(moe, test::catalog_model("mixtral-8x7b")),
            "--num-distributed-optimizer-instances: must divide the expert-data-parallel size "
            "(world / (etp x ep x pp) = 1), as Megatron-LM asks; got 2");
}

// The BF16 optimizer states run on the distributed optimizer only (Megatron-Core's precision-aware
// optimizer asserts it; NeMo's distributed_fused_adam is one).
TEST(OptimizerInstances, Bf16OptimizerStateNeedsTheDistributedOptimizer) {
  const Model m = test::catalog_model("llama3.1-8b");
  Plan p = instances_plan(8, 1);
  p.optimizer_state = OptimizerState::kBf16;
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
  p.zero = 0;
  EXPECT_EQ(test::plan_error(p, m),
            "--optimizer-state: bf16 runs on the distributed optimizer (Megatron-Core's "
            "precision-aware optimizer, NeMo's distributed_fused_adam): needs --zero 1 or more");
  p.optimizer_state = OptimizerState::kBf16Moments;
  EXPECT_NE(test::plan_error(p, m).find("bf16-moments runs on the distributed optimizer"),
            std::string::npos);
  p.optimizer_state = OptimizerState::kFp32;
  EXPECT_EQ(test::plan_error(p, m), "(valid)");
}

// Megatron-Core's parallel_state: an instance is a run of dp x cp / N consecutive ranks of the
// data-parallel group with CP (CP varying fastest), the inter-instance group one rank of each;
// for experts the same split of the expert-data-parallel group.
TEST(OptimizerInstances, GroupsAsMegatronCoreBuildsThem) {
  // tp 2, cp 2, dp 4 on 16 ranks: rank 0's DP-with-CP group is 0, 2, 4, ..., 14 (CP stride 2,
  // DP stride 4); two instances of 4.
  const Layout a(instances_plan(4, 2, 2));
  EXPECT_EQ(a.collective_group(Dim::kDP, 0), (Ranks{0, 2, 4, 6, 8, 10, 12, 14}));
  EXPECT_EQ(a.collective_group(Dim::kIntraDP, 0), (Ranks{0, 2, 4, 6}));
  EXPECT_EQ(a.collective_group(Dim::kIntraDP, 11), (Ranks{9, 11, 13, 15}));
  EXPECT_EQ(a.collective_group(Dim::kInterDP, 6), (Ranks{6, 14}));
  EXPECT_EQ(a.collective_size(Dim::kIntraDP), 4);
  EXPECT_EQ(a.collective_size(Dim::kInterDP), 2);
  EXPECT_EQ(a.groups_in_stage(Dim::kIntraDP, 0),
            (std::vector<Ranks>{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(a.collective_size(Dim::kIntraEDP), 1);  // no EP: experts ride with the dense part
  // Mixtral, tp 1, dp 8, ep 2: expert data parallelism 4 (ranks 0, 2, 4, 6 for rank 0), two
  // instances of 2.
  Plan moe = instances_plan(8, 2);
  moe.tp = 1;
  moe.sp = false;
  moe.ep = 2;
  const Layout b(moe);
  EXPECT_EQ(b.collective_group(Dim::kEDP, 0), (Ranks{0, 2, 4, 6}));
  EXPECT_EQ(b.collective_group(Dim::kIntraEDP, 0), (Ranks{0, 2}));
  EXPECT_EQ(b.collective_group(Dim::kInterEDP, 2), (Ranks{2, 6}));
  EXPECT_EQ(b.collective_group(Dim::kIntraDP, 5), (Ranks{4, 5, 6, 7}));
  // One instance: the DP and EDP groups serve, none of these is built.
  const Layout one(instances_plan(8, 1));
  for (const Dim d : {Dim::kIntraDP, Dim::kInterDP, Dim::kIntraEDP, Dim::kInterEDP}) {
    EXPECT_EQ(one.collective_size(d), 1) << to_string(d);
  }
}

// `trainsim run` on llama3.1-8b at tp 2 with SP, dp 8 over two nodes of 8, sequence 8192, the
// distributed optimizer in `instances` instances, then `more` flags; the JSON report.
nlohmann::json report(std::int64_t instances, const std::vector<std::string>& more,
                      const std::string& zero = "1") {
  std::vector<std::string> args = {"run",
                                   "--model",
                                   "llama3.1-8b",
                                   "--platform",
                                   "h100-sxm-ndr",
                                   "--tp",
                                   "2",
                                   "--sp",
                                   "--dp",
                                   "8",
                                   "--seq-len",
                                   "8192",
                                   "--zero",
                                   zero,
                                   "--num-distributed-optimizer-instances",
                                   std::to_string(instances),
                                   "--format",
                                   "json"};
  args.insert(args.end(), more.begin(), more.end());
  const auto r = test::run_trainsim(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

const nlohmann::json& dp_collective(const nlohmann::json& stage, const std::string& kind) {
  for (const auto& c : stage.at("collectives")) {
    if (c.at("dim") == "dp" && c.at("collective") == kind) return c;
  }
  static const nlohmann::json none;
  ADD_FAILURE() << "no dp " << kind;
  return none;
}

// A DP collective's group dimension, members, nodes and bytes.
void expect_call(const nlohmann::json& c, const std::string& group_dim, int members, int nodes,
                 double bytes) {
  EXPECT_EQ(c.at("group_dim"), group_dim);
  EXPECT_EQ(c.at("members"), members);
  EXPECT_EQ(c.at("nodes"), nodes);
  EXPECT_DOUBLE_EQ(c.at("bytes"), bytes);
}

// llama3.1-8b, tp 2, dp 8 on two nodes of 8, two instances of dp 4 (one node each): the fp32
// gradients (4 bytes a parameter) reduce-scattered within the node, each rank's quarter
// all-reduced with its twin on the other node, the BF16 parameters all-gathered within the node;
// the optimizer's master weights and moments (12 bytes a parameter) over 4 ranks, not 8.
TEST(OptimizerInstances, ReduceWithinAllReduceAcrossAndTwiceTheState) {
  const std::vector<std::string> analytic = {"--gbs", "8", "--engine", "analytic"};
  const auto one = report(1, analytic);
  const auto two = report(2, analytic);
  EXPECT_EQ(two.at("plan").at("num_distributed_optimizer_instances"), 2);
  EXPECT_FALSE(one.at("plan").contains("num_distributed_optimizer_instances"));
  const auto& s = two.at("stages").at(0);
  const double params = s.at("params_per_gpu");
  expect_call(dp_collective(s, "reduce_scatter"), "intra-dp", 4, 1, 4 * params);
  expect_call(dp_collective(s, "all_reduce"), "inter-dp", 2, 2, 4 * params / 4);
  expect_call(dp_collective(s, "all_gather"), "intra-dp", 4, 1, 2 * params);
  // One instance: the reduce-scatter over all 8 ranks on both nodes, no all-reduce.
  const auto& s1 = one.at("stages").at(0);
  EXPECT_EQ(dp_collective(s1, "reduce_scatter").at("members"), 8);
  EXPECT_EQ(dp_collective(s1, "reduce_scatter").at("group_dim"), "dp");
  for (const auto& c : s1.at("collectives")) {
    EXPECT_FALSE(c.at("dim") == "dp" && c.at("collective") == "all_reduce");
  }
  const auto& m1 = s1.at("memory");
  const auto& m2 = s.at("memory");
  EXPECT_DOUBLE_EQ(m1.at("master_weights_bytes"), 4 * params / 8);
  EXPECT_DOUBLE_EQ(m2.at("master_weights_bytes"), 4 * params / 4);
  EXPECT_DOUBLE_EQ(m2.at("optimizer_bytes"), 8 * params / 4);
  EXPECT_DOUBLE_EQ(m2.at("gradients_bytes"), m1.at("gradients_bytes").get<double>());
  // The symmetric replay (one GPU per stage) as the full one.
  EXPECT_DOUBLE_EQ(
      report(2, {"--gbs", "8", "--full-simulation"}).at("step_time_s").get<double>(),
      report(2, {"--gbs", "8", "--engine", "simgrid"}).at("step_time_s").get<double>());
}

// Hybrid sharding (HSDP: PyTorch FSDP's replicate degree) is the same split under --zero 3: the
// same model, tp 2, dp 8 in two instances of 4 (one node each). The BF16 weights are gathered
// within the node before the forward and again before the backward (2 + 2 bytes a parameter),
// the fp32 gradients reduce-scattered within it and each rank's quarter all-reduced across the
// nodes; weights, gradients, master weights and moments (2 + 4 + 4 + 8 bytes a parameter) all
// sharded over the instance's 4 ranks, not all 8.
TEST(OptimizerInstances, HybridShardingUnderZero3) {
  const std::vector<std::string> analytic = {"--gbs", "8", "--engine", "analytic"};
  const auto one = report(1, analytic, "3");
  const auto two = report(2, analytic, "3");
  const auto& s = two.at("stages").at(0);
  const double params = s.at("params_per_gpu");
  expect_call(dp_collective(s, "all_gather"), "intra-dp", 4, 1, 4 * params);
  EXPECT_EQ(dp_collective(s, "all_gather").at("calls"), 2);
  expect_call(dp_collective(s, "reduce_scatter"), "intra-dp", 4, 1, 4 * params);
  expect_call(dp_collective(s, "all_reduce"), "inter-dp", 2, 2, 4 * params / 4);
  const auto& m = s.at("memory");
  const auto& m1 = one.at("stages").at(0).at("memory");
  const std::vector<std::pair<std::string, double>> bytes_per_param = {{"weights_bytes", 2},
                                                                       {"gradients_bytes", 4},
                                                                       {"master_weights_bytes", 4},
                                                                       {"optimizer_bytes", 8}};
  for (const auto& [key, per_param] : bytes_per_param) {
    EXPECT_DOUBLE_EQ(m.at(key), per_param * params / 4) << key;
    EXPECT_DOUBLE_EQ(m1.at(key), per_param * params / 8) << key;
  }
  EXPECT_EQ(dp_collective(one.at("stages").at(0), "all_gather").at("members"), 8);
  EXPECT_EQ(dp_collective(one.at("stages").at(0), "all_gather").at("nodes"), 2);
}

// A plan that no longer fits because each instance holds the optimizer state over fewer ranks:
// the out-of-memory fix names one instance first, and a fix changing dp drops the instances
// where Megatron-LM's rules no longer allow them (tp 4, dp 4: one rank per instance).
TEST(OptimizerInstances, MemoryFixesNameTheInstances) {
  const auto report_json = report(4, {"--mbs", "2", "--gbs", "64", "--engine", "analytic"});
  std::string fix;
  for (const auto& d : report_json.at("diagnostics")) {
    if (d.at("id") == "oom") fix = d.at("fix");
  }
  EXPECT_EQ(fix.rfind("--num-distributed-optimizer-instances 1 (peak ", 0), 0u) << fix;
  EXPECT_NE(fix.find("or --tp 4 --dp 4 --num-distributed-optimizer-instances 1 (peak "),
            std::string::npos)
      << fix;
}

}  // namespace
}  // namespace trainsim
