// `trainsim sweep` end to end: the same CSV, byte for byte, whatever the worker count, sharded and
// merged, or killed half-way and rerun; bad input is one error line and exit 2.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <sstream>
#include <thread>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// 864 plans of Llama 3.1 8B on 8 to 64 GPUs: refusals by rule and by memory, and priced rows.
const char* kSweep = R"({"model": "llama3.1-8b", "gpus": [8, 16, 32, 64],
  "plan": {"seq_len": 8192, "gbs": 256},
  "vary": {"tp": [1, 2, 4, 8], "pp": [1, 2, 4], "mbs": [1, 2, 4],
           "recompute": ["none", "selective", "full"], "zero": [0, 1]},
  "tokens": 1e12})";

struct Sweep {
  std::string dir = test::make_temp_dir();
  std::string file = dir + "/sweep.json";
  Sweep() { test::write_file(file, kSweep); }
  // Runs the sweep into dir/name with extra flags; returns the CSV's bytes.
  std::string run(const std::string& name, std::vector<std::string> flags = {}) const {
    std::vector<std::string> args = {"sweep", file, "--out", dir + "/" + name};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto r = test::run_trainsim(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir + "/" + name + ".part"));
    return test::read_file(dir + "/" + name);
  }
};

std::int64_t lines(const std::string& path) {
  if (!std::filesystem::exists(path)) return 0;
  const std::string s = test::read_file(path);
  return std::count(s.begin(), s.end(), '\n');
}

TEST(SweepCli, SameCsvWithOneOrThreeWorkersAndMergedShards) {
  const Sweep s;
  const std::string one = s.run("one.csv");
  EXPECT_EQ(lines(s.dir + "/one.csv"), 1 + 864);
  EXPECT_EQ(s.run("three.csv", {"--jobs", "3"}), one);
  std::vector<std::string> merge = {"sweep", "--merge"};
  for (const char* k : {"1/3", "2/3", "3/3"}) {
    const std::string name = std::string("shard") + k[0] + ".csv";
    s.run(name, {"--shard", k});
    merge.push_back(s.dir + "/" + name);
  }
  merge.insert(merge.end(), {"--out", s.dir + "/merged.csv"});
  const auto r = test::run_trainsim(merge);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_file(s.dir + "/merged.csv"), one);
  EXPECT_NE(r.out.find("864 plans on 8 to 64 GPUs"), std::string::npos) << r.out;
  // A shard given twice overlaps itself.
  const auto twice = test::run_trainsim({"sweep", "--merge", s.dir + "/shard1.csv",
                                         s.dir + "/shard1.csv", "--out", s.dir + "/bad.csv"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("holds plan 0 again (shards overlap)"), std::string::npos) << twice.err;
}

// Killed (SIGKILL, then SIGINT) once some rows are written, then rerun: the same CSV as an
// uninterrupted run, and no partial file left.
TEST(SweepCli, KilledHalfWayThenRerunFinishesTheSameCsv) {
  const Sweep s;
  const std::string whole = s.run("whole.csv");
  for (const int sig : {SIGKILL, SIGINT}) {
    const std::string out = s.dir + "/killed" + std::to_string(sig) + ".csv";
    std::vector<std::string> argv_s = {TRAINSIM_BINARY, "sweep", s.file, "--out", out};
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (lines(out + ".part") < 50 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep ended before it was killed";
    EXPECT_FALSE(std::filesystem::exists(out));
    const std::int64_t written = lines(out + ".part");
    EXPECT_GE(written, 50);
    EXPECT_LT(written, 864);
    const auto rerun = test::run_trainsim({"sweep", s.file, "--out", out});
    ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
    EXPECT_NE(rerun.err.find("resuming"), std::string::npos) << rerun.err;
    EXPECT_EQ(test::read_file(out), whole);
    EXPECT_FALSE(std::filesystem::exists(out + ".part"));
  }
}

// The best plan replayed on SimGrid: the step `trainsim run` prints for it on the default engine.
TEST(SweepCli, BestPlanReplayedOnSimGridAsRunReplaysIt) {
  const Sweep s;
  const auto r = test::run_trainsim(
      {"sweep", s.file, "--out", s.dir + "/g.csv", "--simgrid-top", "1", "--top", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto at = r.out.find("on SimGrid (flows sharing links) against the analytic engine:\n");
  ASSERT_NE(at, std::string::npos) << r.out;
  // Printed once: the replays run in child processes, which must not repeat what the parent had
  // written to the pipe's buffer before them.
  EXPECT_EQ(r.out.find("fastest 1 plans"), r.out.rfind("fastest 1 plans")) << r.out;
  // The fastest plan's fields, from its CSV row.
  const std::string csv = test::read_file(s.dir + "/g.csv");
  std::istringstream rows(csv);
  std::string line, header;
  std::getline(rows, header);
  std::vector<std::string> names, best;
  for (std::istringstream h(header); std::getline(h, line, ',');) names.push_back(line);
  double most = 0;
  while (std::getline(rows, line)) {
    std::vector<std::string> f;
    for (std::istringstream l(line); std::getline(l, header, ',');) f.push_back(header);
    const auto col = [&](const char* n) {
      return f[static_cast<std::size_t>(std::find(names.begin(), names.end(), n) - names.begin())];
    };
    if (col("status") == "ok" && std::stod(col("tokens_per_s")) > most) {
      most = std::stod(col("tokens_per_s"));
      best = {"run",          "--model",     "llama3.1-8b",    "--platform",
              "h100-sxm-ndr", "--seq-len",   "8192",           "--gbs",
              "256",          "--tp",        col("tp"),        "--pp",
              col("pp"),      "--dp",        col("dp"),        "--mbs",
              col("mbs"),     "--recompute", col("recompute"), "--zero",
              col("zero")};
    }
  }
  ASSERT_FALSE(best.empty());
  const auto run = test::run_trainsim(best);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto step_at = run.out.find("step time");
  ASSERT_NE(step_at, std::string::npos);
  std::istringstream step_line(run.out.substr(step_at + 9));
  std::string step;
  step_line >> step;
  // The table's row: rank, analytic step, SimGrid step.
  std::istringstream table(r.out.substr(r.out.find('\n', r.out.find('\n', at) + 1) + 1));
  std::string rank, analytic, simgrid;
  table >> rank >> analytic >> simgrid;
  EXPECT_EQ(rank, "1");
  EXPECT_EQ(simgrid, step) << r.out << run.out;
}

// A partial file left by another sweep (here another token budget) is not resumed from.
// A sweep over two platforms: the first platform's rows are, byte for byte, the rows a sweep of
// it alone writes; the second's follow with its own platform and price; the deadline's plans are
// ranked by cost and labelled by platform.
TEST(SweepCli, TwoPlatformsEachWithItsPrice) {
  const std::string dir = test::make_temp_dir();
  const std::string common = R"("model": "llama3.1-8b", "gpus": [8, 16],
    "plan": {"seq_len": 8192, "gbs": 64}, "vary": {"tp": [1, 2, 4], "pp": [1, 2]},
    "tokens": 1e11, "deadline_days": 30)";
  test::write_file(dir + "/one.json",
                   "{" + common + R"(, "platform": "h100-sxm-ndr", "price_per_gpu_hour": 2.5})");
  test::write_file(dir + "/two.json", "{" + common +
                                          R"(, "platform": ["h100-sxm-ndr", "h200-sxm-ndr"],
    "price_per_gpu_hour": {"h100-sxm-ndr": 2.5, "h200-sxm-ndr": 3.5}})");
  const auto one = test::run_trainsim({"sweep", dir + "/one.json", "--out", dir + "/one.csv"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto two = test::run_trainsim(
      {"sweep", dir + "/two.json", "--out", dir + "/two.csv", "--jobs", "2", "--simgrid-top", "0"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const std::string single = test::read_file(dir + "/one.csv");
  const std::string both = test::read_file(dir + "/two.csv");
  ASSERT_EQ(lines(dir + "/one.csv"), 1 + 12);
  ASSERT_EQ(lines(dir + "/two.csv"), 1 + 24);
  EXPECT_EQ(both.substr(0, single.size()), single);
  std::istringstream rest(both.substr(single.size()));
  int h200 = 0;
  for (std::string line; std::getline(rest, line);) {
    EXPECT_EQ(line.find(std::to_string(12 + h200) + ",h200-sxm-ndr,"), 0u) << line;
    ++h200;
  }
  EXPECT_EQ(h200, 12);
  EXPECT_NE(two.out.find("24 plans on 8 to 16 GPUs"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find(" (cost; "), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("  h200-sxm-ndr: tp "), std::string::npos) << two.out;
  EXPECT_EQ(one.out.find("h100-sxm-ndr: "), std::string::npos);  // one platform: no prefix
  // The single-platform file priced on both by --platform writes the two-platform file's CSV.
  const auto flag =
      test::run_trainsim({"sweep", dir + "/one.json", "--out", dir + "/flag.csv", "--platform",
                          "h100-sxm-ndr=2.5,h200-sxm-ndr=3.5", "--simgrid-top", "0"});
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(test::read_file(dir + "/flag.csv"), both);
}

TEST(SweepCli, PartialFileOfAnotherSweepIsRefused) {
  const Sweep s;
  const std::string out = s.dir + "/p.csv";
  test::write_file(out + ".part", "# trainsim sweep 0123\n");
  const auto r = test::run_trainsim({"sweep", s.file, "--out", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trainsim: error: " + out +
                       ".part: holds rows of another sweep (another sweep file, model, platform, "
                       "kernel database, trainsim build, token budget, price or shard); remove it "
                       "to start again\n");
  EXPECT_EQ(test::read_file(out + ".part"), "# trainsim sweep 0123\n");  // left as it was
}

TEST(SweepCli, BadInputIsOneLineAndExitTwo) {
  const Sweep s;
  const auto r = test::run_trainsim({"sweep", s.file});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trainsim: error: --out: is required: the CSV file to write\n");
  const auto shard = test::run_trainsim({"sweep", s.file, "--out", "x.csv", "--shard", "4/3"});
  EXPECT_EQ(shard.err, "trainsim: error: --shard: must be K/N with K <= N, got '4/3'\n");
  test::write_file(s.dir + "/bad.json",
                   R"({"model": "llama3.1-8b", "gpus": 8, "vary": {"tp": ["two"]}})");
  const auto bad = test::run_trainsim({"sweep", s.dir + "/bad.json", "--out", s.dir + "/b.csv"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "trainsim: error: " + s.dir +
                         "/bad.json: $.vary.tp[0]: must be an integer, got 'two'\n");
  // A directory for --out is refused before any plan runs, leaving no DIR.part behind.
  const auto dir = test::run_trainsim({"sweep", s.file, "--out", s.dir});
  EXPECT_EQ(dir.exit_code, 2);
  EXPECT_EQ(dir.err,
            "trainsim: error: --out: " + s.dir + " is a directory; name the CSV file to write\n");
  EXPECT_FALSE(std::filesystem::exists(s.dir + ".part"));
}

}  // namespace
}  // namespace trainsim
