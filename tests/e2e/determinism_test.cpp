// The same inputs give the same bytes: reports, traces, diagrams, pages, task graphs and sweep
// CSVs, run after run, on either engine, with one worker or two.
#include <gtest/gtest.h>

#include <map>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// Every output of one `run` (stdout included), by name.
std::map<std::string, std::string> run_outputs(const std::string& engine) {
  const std::string dir = test::make_temp_dir();
  const auto r = test::run_trainsim(
      {"run", test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json", "--engine", engine,
       "--out", dir, "--trace", dir + "/trace.json", "--svg", dir + "/pipeline.svg", "--html",
       dir + "/report.html", "--dump-graph", dir + "/graph.json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> files = {{"stdout", r.out}};
  for (const char* name :
       {"report.json", "report.txt", "trace.json", "pipeline.svg", "report.html", "graph.json"}) {
    files[name] = test::read_file(dir + "/" + name);
  }
  return files;
}

TEST(Determinism, RunOutputsAreByteIdenticalOnBothEngines) {
  for (const char* engine : {"simgrid", "analytic"}) {
    const auto first = run_outputs(engine);
    const auto second = run_outputs(engine);
    for (const auto& [name, bytes] : first) {
      EXPECT_FALSE(bytes.empty()) << engine << " " << name;
      EXPECT_TRUE(bytes == second.at(name)) << engine << ": " << name << " differs between runs";
    }
  }
}

TEST(Determinism, ComparePagesAndValidationAreByteIdentical) {
  const std::string dir = test::make_temp_dir();
  std::vector<std::string> outs;
  for (const char* page : {"a.html", "b.html"}) {
    const auto r = test::run_trainsim(
        {"compare", test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json", "--set",
         "schedule=interleaved,vp=5", "--engine", "analytic", "--html", dir + "/" + page});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    outs.push_back(r.out);
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_TRUE(test::read_file(dir + "/a.html") == test::read_file(dir + "/b.html"));
  const auto v1 = test::run_trainsim({"validate", "--format", "json"});
  const auto v2 = test::run_trainsim({"validate", "--format", "json"});
  ASSERT_EQ(v1.exit_code, 0) << v1.err;
  EXPECT_TRUE(v1.out == v2.out);
}

// One worker or two: the same CSV and the same summary.
TEST(Determinism, SweepCsvWithOneOrTwoWorkers) {
  const std::string dir = test::make_temp_dir();
  test::write_file(dir + "/sweep.json", R"({"model": "llama3.1-8b", "gpus": [8, 16],
    "plan": {"seq_len": 4096, "gbs": 64},
    "vary": {"tp": [1, 2, 4], "pp": [1, 2], "mbs": [1, 2], "recompute": ["none", "full"]}})");
  std::vector<std::string> printed;
  for (const char* jobs : {"1", "2"}) {
    const auto r = test::run_trainsim(
        {"sweep", dir + "/sweep.json", "--out", dir + "/jobs" + jobs + ".csv", "--jobs", jobs});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    printed.push_back(r.out);
  }
  EXPECT_TRUE(test::read_file(dir + "/jobs1.csv") == test::read_file(dir + "/jobs2.csv"));
  EXPECT_EQ(printed[0], printed[1]);
}

}  // namespace
}  // namespace trainsim
