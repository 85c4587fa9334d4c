// Long work on stderr: a progress line with phases and counts, and what an interrupt leaves.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

std::string scenario() {
  return test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json";
}

// Files in `dir` whose name holds ".tmp-": what an interrupted atomic write would leave.
bool has_temp_files(const std::string& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().find(".tmp-") != std::string::npos) return true;
  }
  return false;
}

// Off a terminal the line is off unless asked for; asked for, it says each phase as plain lines
// and how long the work took, and the report on stdout is unchanged.
TEST(LongWork, ProgressLineWhenAskedForOffATerminal) {
  const std::vector<std::string> args = {"run", scenario(), "--engine", "analytic"};
  const auto quiet = test::run_trainsim(args);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  ::setenv("TRAINSIM_PROGRESS", "always", 1);
  const auto loud = test::run_trainsim(args);
  ::unsetenv("TRAINSIM_PROGRESS");
  ASSERT_EQ(loud.exit_code, 0) << loud.err;
  EXPECT_EQ(loud.out, quiet.out);
  EXPECT_EQ(loud.err.rfind("reading the inputs\ncosting the plan\nbuilding the task graph\n", 0),
            0u)
      << loud.err;
  EXPECT_NE(loud.err.find("progress: done in "), std::string::npos) << loud.err;
}

// SIGINT or SIGTERM during the replay: the outputs not yet written are named, the previous file
// stays whole, no temp file is left, and the program dies of the signal.
TEST(LongWork, InterruptNamesWhatWasNotWritten) {
  for (const int sig : {SIGINT, SIGTERM}) {
    const std::string dir = test::make_temp_dir();
    test::write_file(dir + "/trace.json", "previous\n");
    // Long enough to be interrupted: every GPU of 512 replayed on SimGrid.
    auto running =
        test::start_trainsim({"run", scenario(), "--dp", "32", "--gbs", "2048", "--full-simulation",
                              "--dump-graph", dir + "/graph.json", "--trace", dir + "/trace.json"});
    // The graph is written just before the replay starts (waited for up to ctest's limit).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!fs::exists(dir + "/graph.json") && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const bool replaying = fs::exists(dir + "/graph.json");
    ::kill(running.pid, sig);
    const auto r = running.finish();
    ASSERT_TRUE(replaying) << "the graph was not written within 120 s";
    EXPECT_EQ(r.exit_code, 128 + sig) << r.err;
    const std::string name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    EXPECT_EQ(r.err,
              "trainsim: interrupted by " + name + "; not written: " + dir + "/trace.json\n");
    EXPECT_EQ(test::read_file(dir + "/trace.json"), "previous\n");
    EXPECT_FALSE(has_temp_files(dir));
  }
}

// The largest plan trainsim takes, on the analytic engine: one GPU per stage stands for its
// 16,384 data-parallel copies (the symmetric replay), so it answers rather than runs on silently.
TEST(LongWork, TheLargestPlanAnswers) {
  const auto r = test::run_trainsim(
      {"run", scenario(), "--dp", "65536", "--gbs", "65536", "--engine", "analytic"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.out.rfind("trainsim 0.1.0: llama3.1-70b on h100-sxm-ndr (1,048,576 GPUs, 131,072 nodes)\n",
                  0),
      0u)
      << r.out;
  EXPECT_NE(r.out.find("\nstep time "), std::string::npos);
}

}  // namespace
}  // namespace trainsim
