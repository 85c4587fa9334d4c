// Symmetric simulation against the full one (--full-simulation, the oracle): the same report on
// plans of 64 to 1,024 GPUs, with both engines. (The two-leaf case caught a folded ring that
// sent one flow per route class, which contended on the replaying GPU's NIC: twice the DP time.)
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <tuple>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

struct Case {
  /// The test's name in ctest (one test per case, each within its own timeout).
  const char* id;
  const char* name;
  std::vector<std::string> args;
  std::int64_t gpus;
  std::int64_t stages;
  /// Relative agreement required. Exact but for folded all-to-alls across nodes on SimGrid: the
  /// replaying GPU sends the slowest of each class of its group's flows, while in the full
  /// replay every GPU sends its own and they contend a little differently on shared links.
  double tolerance = 1e-6;
};

/// What ctest prints beside the test's name (instead of the case's bytes).
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

std::vector<Case> cases() {
  const std::vector<std::string> m70 = {"--model", "llama3.1-70b", "--platform", "h100-sxm-ndr"};
  auto with = [](std::vector<std::string> a, std::vector<std::string> b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  return {
      {"Llama70bOn64EveryOverlap", "70b on 64 GPUs, every overlap",
       with(m70, {"--tp", "8", "--pp", "4", "--dp", "2", "--gbs", "64", "--seq-len", "8192", "--sp",
                  "--zero", "1", "--overlap-grad-reduce", "--overlap-param-gather",
                  "--tp-comm-overlap"}),
       64, 4},
      {"Llama70bOn1024FourLeaves", "70b on 1,024 GPUs in four leaves",
       with(m70, {"--tp", "8", "--pp", "4", "--dp", "32", "--gbs", "512", "--seq-len", "8192"}),
       1024, 4},
      // 64 nodes per stage over two leaves of 32: each DP ring has edges under one leaf and
      // edges through the spine (two route classes, each GPU sending one edge).
      {"Llama8bOn1024RingsAcrossLeaves",
       "8b on 1,024 GPUs, DP rings across two leaves",
       {"--model", "llama3.1-8b", "--platform", "h100-sxm-ndr", "--tp", "8", "--pp", "2", "--dp",
        "64", "--gbs", "512", "--seq-len", "8192"},
       1024,
       2},
      // tp 4: two DP members per node, one ring per rail (NVLink and NIC edges on every GPU).
      {"Llama70bScenarioTp4On64",
       "the default scenario: 70b, tp 4, on 64 GPUs",
       {test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json"},
       64,
       4},
      // Megatron's --use-tp-pp-dp-mapping: pipeline neighbours on adjacent nodes, DP peers
      // pp nodes apart.
      {"Llama70bOn128TpPpDpOrder", "70b on 128 GPUs in the tp-pp-dp order",
       with(m70, {"--tp", "8", "--pp", "4", "--dp", "4", "--gbs", "64", "--seq-len", "8192",
                  "--rank-order", "tp-cp-ep-pp-dp"}),
       128, 4},
      {"Llama70bInterleavedOn128", "70b interleaved on 128 GPUs",
       with(m70,
            {"--tp", "8", "--pp", "8", "--dp", "2", "--vp", "2", "--schedule", "interleaved",
             "--gbs", "64", "--seq-len", "4096", "--sp", "--zero", "1", "--overlap-grad-reduce"}),
       128, 8},
      {"Llama8bZbH1On256",
       "8b ZB-H1 on 256 GPUs",
       {"--model", "llama3.1-8b", "--platform", "h100-sxm-ndr", "--tp", "8", "--pp", "4", "--dp",
        "8", "--schedule", "zb-h1", "--gbs", "128", "--seq-len", "8192", "--recompute",
        "selective"},
       256,
       4},
      // Context parallelism: CP rings beside the attention within a node, gradients over
      // dp x cp (groups of 8 across four nodes), and a CP group across nodes (cp outermost).
      {"Llama70bCp2On128", "70b tp 4 cp 2 on 128 GPUs",
       with(m70, {"--tp", "4", "--sp", "--cp", "2", "--pp", "4", "--dp", "4", "--gbs", "32",
                  "--seq-len", "16384", "--zero", "1", "--overlap-grad-reduce"}),
       128, 4},
      {"Llama8bCp4AcrossNodes",
       "8b cp 4 across nodes",
       {"--model", "llama3.1-8b", "--platform", "h100-sxm-ndr", "--tp", "2", "--cp", "4", "--dp",
        "4", "--gbs", "8", "--seq-len", "32768", "--rank-order", "tp-dp-ep-cp-pp"},
       32,
       1},
      // Hierarchical CP: a2a groups of four GPUs on a node, rings of two across the nodes.
      {"Llama8bA2aP2pAcrossNodes",
       "8b cp 8 a2a+p2p across nodes",
       {"--model", "llama3.1-8b", "--platform", "h100-sxm-ndr", "--cp", "8", "--cp-comm-type",
        "a2a+p2p", "--cp-a2a-size", "4", "--dp", "2", "--gbs", "4", "--seq-len", "8192",
        "--rank-order", "tp-dp-ep-cp-pp"},
       16,
       1},
      // Expert parallelism: all-to-alls over EP groups of GPUs a TP group apart across two
      // nodes, and expert gradients over their own groups beside the dense ones; then EP over
      // tp x dp with etp 1, in one node.
      {"MixtralEp8AcrossNodes",
       "mixtral ep 8 across nodes",
       {"--model",     "mixtral-8x7b",
        "--platform",  "h100-sxm-ndr",
        "--tp",        "2",
        "--sp",        "--pp",
        "2",           "--dp",
        "16",          "--ep",
        "8",           "--gbs",
        "32",          "--seq-len",
        "4096",        "--zero",
        "1",           "--overlap-grad-reduce",
        "--recompute", "full"},
       64,
       2,
       5e-4},
      {"MixtralEp8Etp1",
       "mixtral ep 8 with etp 1",
       {"--model", "mixtral-8x7b", "--platform", "h100-sxm-ndr", "--tp", "2", "--sp", "--dp", "8",
        "--ep", "8", "--etp", "1", "--gbs", "16", "--seq-len", "4096", "--moe-imbalance", "1.3"},
       16,
       1},
  };
}

nlohmann::json report(std::vector<std::string> args, const std::string& engine, bool full) {
  args.insert(args.begin(), "run");
  for (const char* a : {"--format", "json", "--engine"}) args.emplace_back(a);
  args.push_back(engine);
  if (full) args.emplace_back("--full-simulation");
  const auto r = test::run_trainsim(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

void expect_near(const nlohmann::json& a, const nlohmann::json& b, const std::string& what,
                 double tolerance = 1e-6) {
  const double x = a.get<double>(), y = b.get<double>();
  EXPECT_NEAR(x, y, tolerance * std::max(std::abs(y), 1e-3)) << what;
}

class SymmetricEqualsFull : public ::testing::TestWithParam<Case> {};

// One test per case, so that each runs within its own timeout (the eleven together took 105 s
// under the sanitizers, near the 120 s limit on two busy cores).
TEST_P(SymmetricEqualsFull, OnBothEngines) {
  const Case& c = GetParam();
  for (const char* engine : {"analytic", "simgrid"}) {
    SCOPED_TRACE(std::string(c.name) + ", " + engine);
    const auto sym = report(c.args, engine, false), full = report(c.args, engine, true);
    EXPECT_EQ(sym["provenance"]["replayed_gpus"], c.stages);
    EXPECT_EQ(full["provenance"]["replayed_gpus"], c.gpus);
    const double tol = std::string(engine) == "simgrid" ? c.tolerance : 1e-6;
    for (const char* k : {"step_time_s", "bubble_fraction", "compute_s", "tokens_per_s"}) {
      expect_near(sym[k], full[k], k, tol);
    }
    for (const char* section : {"exposed_comm_s", "overlapped_comm_s"}) {
      for (const char* kind : {"tp", "pp", "dp", "cp", "ep"}) {
        const std::string what = std::string(section) + " " + kind;
        if (tol > 1e-6) {  // as a share of the step
          EXPECT_NEAR(sym[section][kind].get<double>(), full[section][kind].get<double>(),
                      tol * full["step_time_s"].get<double>())
              << what;
        } else {
          expect_near(sym[section][kind], full[section][kind], what);
        }
      }
    }
    for (std::size_t s = 0; s < full["stages"].size(); ++s) {
      expect_near(sym["stages"][s]["compute_s"], full["stages"][s]["compute_s"], "stage", tol);
    }
    EXPECT_EQ(sym["diagnostics"], full["diagnostics"]);
  }
}

INSTANTIATE_TEST_SUITE_P(SymmetricSimulation, SymmetricEqualsFull, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.id; });

// Without contention, stages whose GPUs reach their pipeline neighbours over different routes
// are replayed by one GPU per class of pipeline chain: the same report as the full replay.
// 6 GPUs a stage over 8-GPU nodes (two classes), and 160 a stage over 32-node leaves.
TEST(SymmetricSimulation, OneGpuPerChainClassEqualsTheFullOne) {
  const std::vector<std::tuple<std::vector<std::string>, std::int64_t, std::int64_t>> plans = {
      {{"--model", "llama3.1-8b", "--platform", "h100-sxm-ndr", "--tp", "2", "--pp", "2", "--dp",
        "3", "--gbs", "12", "--seq-len", "4096", "--zero", "1", "--overlap-grad-reduce"},
       12,
       4},
      {{"--model", "llama3.1-8b", "--platform", "h100-sxm-ndr", "--tp",        "8",         "--pp",
        "2",       "--dp",        "20",         "--gbs",        "160",         "--seq-len", "4096",
        "--sp",    "--zero",      "1",          "--schedule",   "interleaved", "--vp",      "2"},
       320,
       0},
  };
  for (const auto& [args, gpus, replayed] : plans) {
    SCOPED_TRACE(std::to_string(gpus) + " GPUs");
    const auto sym = report(args, "analytic", false), full = report(args, "analytic", true);
    const auto n = sym["provenance"]["replayed_gpus"].get<std::int64_t>();
    if (replayed > 0) {
      EXPECT_EQ(n, replayed);
    }
    EXPECT_GT(n, 2);  // more than one per stage
    EXPECT_LT(n, gpus);
    EXPECT_EQ(full["provenance"]["replayed_gpus"], gpus);
    for (const char* k : {"step_time_s", "bubble_fraction", "compute_s", "tokens_per_s"}) {
      expect_near(sym[k], full[k], k);
    }
    for (const char* section : {"exposed_comm_s", "overlapped_comm_s"}) {
      for (const char* kind : {"tp", "pp", "dp"}) {
        expect_near(sym[section][kind], full[section][kind], std::string(section) + " " + kind);
      }
    }
    EXPECT_EQ(sym["diagnostics"], full["diagnostics"]);
  }
}

// Where a stage's GPUs do not all behave alike the full simulation runs: at tp 4 and dp 3 each
// DP group has two GPUs on one node and one on the next, so its ring sends from one GPU over
// NVLink and from two over the network and loads their links differently (which only contention
// sees). The default scenario's tp 4 x dp 4 is symmetric: one ring per rail.
TEST(SymmetricSimulation, FullWhereTheLayoutIsNotSymmetric) {
  const std::vector<std::string> args = {"--model", "llama3.1-8b", "--platform", "h100-sxm-ndr",
                                         "--tp",    "4",           "--dp",       "3",
                                         "--gbs",   "12",          "--seq-len",  "4096"};
  const auto simgrid = report(args, "simgrid", false);
  EXPECT_EQ(simgrid["provenance"]["replayed_gpus"], 12);
  EXPECT_EQ(simgrid["provenance"]["why_full_replay"],
            "stage 0's data-parallel ring sends from some GPUs over NVLink and from others over "
            "the network, so their links carry different loads");
  const auto analytic = report(args, "analytic", false);
  EXPECT_EQ(analytic["provenance"]["replayed_gpus"], 1);
  EXPECT_FALSE(analytic["provenance"].contains("why_full_replay"));
  const auto text = test::run_trainsim({"run", test::default_scenario()});
  EXPECT_NE(text.out.find("(symmetric: 8 of 256 GPUs replayed, one per pipeline stage)"),
            std::string::npos)
      << text.out;
}

}  // namespace
}  // namespace trainsim
