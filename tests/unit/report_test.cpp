#include "sim/report/report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/collective/group_collectives.hpp"
#include "sim/core/format.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/graph/builder.hpp"
#include "sim/model/flops.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Report simulated(const Model& m, const Plan& p, PublishedComparison published = {}) {
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto part = build_partition(m, pf, p);
  const auto costs = compute_costs(m, pf, p, part);
  const auto graph = build_task_graph(p, costs);
  EngineOptions options;
  options.list_collectives = true;
  const auto sim = simulate_analytic(graph, Topology(pf, p.world_size()), options);
  return make_report({m, pf, p, part, costs, sim, "t", {}, {}, {}, std::move(published), {}});
}

Report simulated(const Plan& p, PublishedComparison published = {}) {
  return simulated(test::catalog_model("llama3.1-8b"), p, std::move(published));
}

std::string simulate_report(const Plan& p) {
  return report_json(simulated(p));
}

Plan plan() {
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.dp = 2;
  p.gbs = 16;
  p.seq_len = 4096;
  return p;
}

// pp 6 builds 6 x floor(32 / 6) = 30 of Llama 3.1 8B's 32 layers (Megatron-Core before uneven
// stages): model TFLOP/s and MFU count the 30 layers the step runs, not the model's 32.
TEST(Report, ModelFlopsCountOnlyTheLayersAPlanBuilds) {
  Plan p = plan();
  p.tp = 1;
  p.pp = 6;
  p.dp = 1;
  const Report r = simulated(p);
  Model built = test::catalog_model("llama3.1-8b");
  built.num_layers = 30;
  const double flops = model_flops_per_sample(built, 4096) * 16.0 / r.step_time_s / 6.0;
  EXPECT_DOUBLE_EQ(r.model_tflops_per_gpu, flops / 1e12);
  EXPECT_DOUBLE_EQ(r.mfu, flops / 989e12);
  EXPECT_EQ(r.model_params, 8030261248);  // the model's own count, as the model line names it
}

// A stage busy the whole step (CP a2a at 32k: compute and exposed communication fill it) has no
// idle time, not the rounding residue of the step less its parts (-7.2e-16 s in the JSON).
TEST(Report, IdleTimeOfAFullyBusyStageIsZero) {
  Plan p = plan();
  p.pp = 1;
  p.dp = 1;
  p.cp = 4;
  p.sp = true;
  p.cp_comm = CpComm::kA2A;
  p.seq_len = 32768;
  p.gbs = 8;
  const Report r = simulated(p);
  for (const auto& s : r.stages) EXPECT_EQ(s.idle_s, 0.0);
  EXPECT_EQ(r.bubble_fraction, 0.0);
}

// Each stage's collectives per step, from the task graph: the TP all-reduces of the stage's
// passes (two per layer and pass, forward and backward, per micro-batch, plus the embedding's
// and the loss's), and the DP gradient all-reduce of the stage's gradients, priced as the
// collectives module prices them; bus bandwidth as nccl-tests defines it.
TEST(Report, CollectivesPerStepAgreeWithTheirClosedForms) {
  const Plan p = plan();
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto costs = compute_costs(m, pf, p, build_partition(m, pf, p));
  const auto j = nlohmann::json::parse(simulate_report(p));
  const Topology topo(pf, p.world_size());
  const double microbatches = 8;
  for (std::size_t s = 0; s < 2; ++s) {
    const auto& c = j["stages"][s]["collectives"];
    ASSERT_EQ(c.size(), 2u) << c.dump();
    const auto& stage = costs.stages[s];
    // DP: one all-reduce of the fp32 gradients over GPUs {leader, leader + 2}, in one node
    // (tp 2 x dp 2 = 4 GPUs per stage).
    const auto& dp = c[1];
    EXPECT_EQ(dp["dim"], "dp");
    EXPECT_EQ(dp["collective"], "all_reduce");
    EXPECT_EQ(dp["members"], 2);
    EXPECT_EQ(dp["nodes"], 1);
    EXPECT_EQ(dp["calls"], 1);
    EXPECT_DOUBLE_EQ(dp["bytes"].get<double>(), stage.grad_bytes);
    const std::int32_t leader = static_cast<std::int32_t>(4 * s);
    const GroupCollectives dp_group(topo, {leader, leader + 2});
    const auto choice = dp_group.choose(CollectiveKind::kAllReduce, stage.grad_bytes, 1);
    EXPECT_EQ(dp["algorithm"], to_string(choice.algorithm));
    EXPECT_DOUBLE_EQ(dp["seconds"].get<double>(), choice.seconds);
    EXPECT_DOUBLE_EQ(dp["bus_bandwidth_bytes_per_s"].get<double>(),
                     stage.grad_bytes / choice.seconds * 1.0);  // 2(n-1)/n = 1 for n = 2
    // TP: every pass's all-reduces, once per micro-batch.
    const auto& tp = c[0];
    EXPECT_EQ(tp["dim"], "tp");
    EXPECT_EQ(tp["members"], 2);
    double calls = 0, bytes = 0;
    for (const auto* pass : {&stage.forward, &stage.backward}) {
      const auto load = collective_load(pass->collectives, CollectiveKind::kAllReduce, Dim::kTP);
      calls += static_cast<double>(load.count) * microbatches;
      bytes += load.bytes * microbatches;
    }
    EXPECT_EQ(tp["calls"].get<double>(), calls);
    EXPECT_DOUBLE_EQ(tp["bytes"].get<double>(), bytes);
  }
}

// TP 3 over 8-GPU nodes (GPT-3 175B's 96 heads, 4 of its layers), dp 3, pp 2: each stage's TP
// groups are ranks 0-2, 3-5, 6-8 and 9-11, 12-14, 15-17; 6-8 and 15-17 straddle two nodes, the
// stages' leaders' groups do not. Each stage lists a straddling group's collectives, the ones the
// step waits for, and they take longer than the leader's.
TEST(Report, CollectivesAreTheStagesSlowestGpus) {
  Model m = test::catalog_model("gpt3-175b");
  m.num_layers = 4;
  Plan p = plan();
  p.tp = 3;
  p.dp = 3;
  p.gbs = 6;
  p.seq_len = 2048;
  const Report r = simulated(m, p);
  ASSERT_EQ(r.stages.size(), 2u);
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto part = build_partition(m, pf, p);
  EngineOptions options;
  options.list_collectives = true;
  const auto sim = simulate_analytic(build_task_graph(p, compute_costs(m, pf, p, part)),
                                     Topology(pf, p.world_size()), options);
  for (const auto& stage : r.stages) {
    const auto& leaders =
        sim.collectives.at(static_cast<std::size_t>(sim.rank_of(9 * stage.index)));
    double shown = 0, leader = 0;
    for (const auto& c : stage.collectives) {
      shown += c.seconds;
      if (c.dim == Dim::kTP) {
        EXPECT_EQ(c.nodes, 2) << "stage " << stage.index;
      }
    }
    for (const auto& c : leaders) {
      leader += c.seconds;
      if (c.dim == Dim::kTP) {
        EXPECT_EQ(c.nodes, 1) << "stage " << stage.index;
      }
    }
    EXPECT_GT(shown, 1.5 * leader) << "stage " << stage.index;
  }
}

// Each collective names the group it runs on: Qwen3-30B-A3B's recipe at ep 8 on 16 GPUs (dp 16,
// tp 1, Megatron's rank order) gathers and reduces its dense parameters over all 16 data-parallel
// ranks, its experts' over the 16 / 8 = 2 expert-data-parallel ranks (one per node), and reduces
// FP8's amaxes over the stage; each row's traffic (`dim`) is its group's (`group_dim`).
TEST(Report, CollectivesNameTheirGroupsDimension) {
  const auto r =
      test::run_trainsim({"run", test::source_dir() + "/scenarios/qwen3-30b-a3b-16gpu.json", "--ep",
                          "8", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const std::map<std::string, std::string> traffic = {
      {"ep", "ep"}, {"dp", "dp"}, {"edp", "dp"}, {"stage", "dp"}};
  std::map<std::string, std::int64_t> members;  // group_dim/collective -> members
  for (const auto& c : j.at("stages").at(0).at("collectives")) {
    const std::string group = c.at("group_dim");
    ASSERT_TRUE(traffic.count(group)) << c.dump();
    EXPECT_EQ(c.at("dim"), traffic.at(group)) << c.dump();
    members[group + "/" + c.at("collective").get<std::string>()] = c.at("members");
  }
  const std::map<std::string, std::int64_t> expected = {
      {"ep/all_to_all", 8},  {"dp/all_gather", 16},     {"dp/reduce_scatter", 16},
      {"edp/all_gather", 2}, {"edp/reduce_scatter", 2}, {"stage/all_reduce", 16}};
  EXPECT_EQ(members, expected);
}

// A published step time is printed with trainsim's signed error against it and whether the
// calibration's band holds it; with flags that change the recipe, the reason instead.
TEST(Report, PublishedStepTimesCarryTheirError) {
  const Report base = simulated(plan());
  const double step = base.step_time_s;
  ASSERT_GT(base.step_time_p90_s, base.step_time_p10_s);
  PublishedComparison pub;
  pub.figures = {{.step_time_s = step / 1.05, .source = "bench A"},
                 {.step_time_s = step / 0.98, .source = "bench B"},
                 {.step_time_s = base.step_time_p90_s, .source = "C"}};
  const Report r = simulated(plan(), pub);
  const auto j = nlohmann::json::parse(report_json(r));
  const auto& figures = j.at("published").at("step_times");
  ASSERT_EQ(figures.size(), 3u);
  EXPECT_NEAR(figures[0].at("error").get<double>(), 0.05, 1e-12);
  EXPECT_NEAR(figures[1].at("error").get<double>(), -0.02, 1e-12);
  EXPECT_EQ(figures[1].at("source"), "bench B");
  EXPECT_FALSE(j.at("published").contains("not_compared"));
  const std::string text = report_text(r);
  // Inside or outside is the report's P10-P90 against the published figure.
  const bool a_inside = step / 1.05 >= r.step_time_p10_s;
  EXPECT_NE(text.find("bench A (trainsim +5.0 %, " + std::string(a_inside ? "inside" : "outside")),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("bench B (trainsim -2.0 %, inside the P10-P90 band)"), std::string::npos);
  EXPECT_NE(text.find(", C (trainsim -"), std::string::npos);

  pub.not_compared = "--tp changes the recipe the published step time was measured on";
  const Report changed = simulated(plan(), pub);
  const auto jc = nlohmann::json::parse(report_json(changed));
  EXPECT_FALSE(jc.at("published").at("step_times")[0].contains("error"));
  EXPECT_EQ(jc.at("published").at("not_compared"), pub.not_compared);
  EXPECT_NE(report_text(changed).find("published            not compared: --tp changes"),
            std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(simulate_report(plan())).contains("published"));
}

TEST(Report, DeterministicJson) {
  EXPECT_EQ(simulate_report(plan()), simulate_report(plan()));
}

// Each stage's memory breakdown adds up to its peak; the model state is 18 bytes per parameter
// held (no ZeRO); 1F1B holds p - s micro-batches on stage s (8 micro-batches, pp 2).
TEST(Report, MemoryBreakdownAddsUpToThePeak) {
  const auto j = nlohmann::json::parse(simulate_report(plan()));
  ASSERT_EQ(j["stages"].size(), 2u);
  for (std::size_t s = 0; s < 2; ++s) {
    const auto& st = j["stages"][s];
    const auto& m = st["memory"];
    const double params = st["params_per_gpu"].get<double>();
    EXPECT_DOUBLE_EQ(m["weights_bytes"].get<double>(), 2 * params);
    EXPECT_DOUBLE_EQ(m["gradients_bytes"].get<double>(), 4 * params);
    EXPECT_DOUBLE_EQ(m["master_weights_bytes"].get<double>(), 4 * params);
    EXPECT_DOUBLE_EQ(m["optimizer_bytes"].get<double>(), 8 * params);
    EXPECT_GT(m["activations_bytes"].get<double>(), 0.0);
    EXPECT_GT(m["runtime_bytes"].get<double>(), 0.0);
    EXPECT_EQ(m["microbatches_in_flight"], 2 - static_cast<int>(s));
    double sum = 0;
    for (const char* k : {"weights_bytes", "gradients_bytes", "master_weights_bytes",
                          "optimizer_bytes", "activations_bytes", "runtime_bytes"}) {
      sum += m[k].get<double>();
    }
    const double peak = st["peak_memory_bytes"];
    EXPECT_NEAR(sum, peak, 1e-9 * peak);
  }
}

TEST(Report, ContractFieldsAndConsistency) {
  const auto j = nlohmann::json::parse(simulate_report(plan()));
  for (const char* key :
       {"step_time_s", "tokens_per_s", "model_tflops_per_gpu", "mfu", "bubble_fraction",
        "exposed_comm_s", "stages", "diagnostics", "provenance", "schema_version"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  const double step = j["step_time_s"];
  EXPECT_DOUBLE_EQ(j["tokens_per_s"].get<double>(), 16.0 * 4096.0 / step);
  const double flops =
      model_flops_per_sample(test::catalog_model("llama3.1-8b"), 4096) * 16.0 / step / 8.0;
  EXPECT_DOUBLE_EQ(j["model_tflops_per_gpu"].get<double>(), flops / 1e12);
  EXPECT_DOUBLE_EQ(j["mfu"].get<double>(), flops / 989e12);
  for (const char* k : {"tp", "pp", "dp", "cp", "ep"}) EXPECT_TRUE(j["exposed_comm_s"].contains(k));
  ASSERT_EQ(j["stages"].size(), 2u);
  for (const char* k : {"index", "blocks", "layers", "params", "compute_s"}) {
    EXPECT_TRUE(j["stages"][0].contains(k)) << k;
  }
  // The H100's measured database holds every forward and backward kernel of Llama 3.1 8B at
  // TP 2 and 4096 tokens (the suite times the catalog's shapes); the optimizer's flat buffers
  // lie beyond its memory-bound grid: the rate of the largest measured one (nearest). The shares
  // weigh each kernel by its launches in the step.
  const auto& share = j["provenance"]["kernel_time_share"];
  std::map<std::string, double> by_source;
  double total = 0;
  for (const auto& k : j["provenance"]["kernels"]) {
    const double launches = k["count"].get<double>() *
                            (k["pass"] == "optimizer" ? 1.0 : j["microbatches"].get<double>());
    const double t = k["seconds"].get<double>() * launches;
    total += t;
    by_source[k["source"].get<std::string>()] += t;
    EXPECT_EQ(k["source"], k["pass"] == "optimizer" ? "nearest" : "measured") << k["name"];
    if (k["kind"] == "attention") {
      EXPECT_EQ(k["shape"], k["pass"] == "forward"
                                ? "attention fwd bf16 b=1 s=4096 h=16 kv=4 d=128 causal"
                                : "attention bwd bf16 b=1 s=4096 h=16 kv=4 d=128 causal");
    }
  }
  for (const char* source : {"measured", "interpolated", "nearest", "published", "roofline"}) {
    EXPECT_NEAR(share[source].get<double>(), by_source[source] / total, 1e-12) << source;
  }
  EXPECT_GT(share["measured"].get<double>(), 0.95);
  EXPECT_EQ(j["provenance"]["engine"], "analytic");
  // Every GPU's step divides into compute, exposed communication and idle time.
  for (const auto& s : j["stages"]) {
    double comm = 0;
    for (const auto& [_, v] : s["exposed_comm_s"].items()) comm += v.get<double>();
    EXPECT_NEAR(s["compute_s"].get<double>() + comm + s["idle_s"].get<double>(), step, 1e-9 * step);
  }
}

// A stage's wait_s is its passes' waits for the calls beside their kernels (here TP userbuffer
// calls outlasting their GEMMs), per micro-batch, as the costs price them: part of forward_s and
// backward_s, not of compute_s. The text says so under the stage table only where there is one.
TEST(Report, StagesWaitIsTheirPassesStalls) {
  Plan p = plan();
  p.sp = true;
  p.tp_comm_overlap = true;
  const Report r = simulated(p);
  const Model m = test::catalog_model("llama3.1-8b");
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const auto costs = compute_costs(m, pf, p, build_partition(m, pf, p));
  double most = 0;
  for (const auto& s : r.stages) {
    const auto& c = costs.stages[static_cast<std::size_t>(s.index)];
    const double stalls =
        c.forward.overlap_stall() + c.backward.overlap_stall() + c.recompute.overlap_stall();
    EXPECT_GT(stalls, 0.0) << s.index;
    EXPECT_DOUBLE_EQ(s.wait_s, stalls) << s.index;
    EXPECT_LT(s.wait_s, s.forward_s + s.backward_s) << s.index;
    most = std::max(most, s.wait_s);
  }
  const std::string text = report_text(r);
  EXPECT_NE(text.find("fwd/mb and bwd/mb include each pass's wait for the calls beside its "
                      "kernels, up to " +
                      format_seconds(most) + " a micro-batch"),
            std::string::npos)
      << text;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(report_json(r))["stages"][0]["wait_s"].get<double>(),
                   r.stages[0].wait_s);

  const Report plain = simulated(plan());
  for (const auto& s : plain.stages) EXPECT_EQ(s.wait_s, 0.0) << s.index;
  EXPECT_EQ(report_text(plain).find("include each pass's wait"), std::string::npos);
}

// A value wider than its column (10^18 parameters on a GPU, an exabyte at its peak) still leaves a
// space before the next column: the stage and memory tables keep their columns apart.
TEST(Report, WideValuesKeepTheirColumnsApart) {
  Report r = simulated(plan());
  auto& s = r.stages[0];
  s.params_per_gpu = 1'000'000'000'000'000'000;  // 25 characters grouped, in a column of 16
  s.peak_memory_bytes = 1e21;                    // "909,494,701.77 TiB", in a column of 12
  s.memory.weights = 1e21;
  const std::string text = report_text(r);
  const std::string layers = std::to_string(s.layers);
  EXPECT_NE(text.find("\n0      " + layers + std::string(8 - layers.size(), ' ') +
                      format_grouped(s.params_per_gpu) + " " + format_seconds(s.forward_s)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(format_bytes(1e21) + " embedding"), std::string::npos) << text;
  EXPECT_NE(text.find("\n0      " + format_bytes(1e21) + " " + format_bytes(s.memory.gradients)),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace trainsim
