// Where the outputs go: atomically into regular files, through symlinks and into FIFOs and
// character devices, '-' on standard output, never two on one path; a write error names the
// path; SIGINT, SIGTERM and SIGKILL at any moment leave the previous file or the complete new one
// and no temp file.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <random>
#include <thread>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

namespace fs = std::filesystem;

std::string scenario() {
  return test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json";
}

std::vector<std::string> run_args(std::vector<std::string> more) {
  std::vector<std::string> args = {"run", scenario(), "--engine", "analytic"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Files in `dir` whose name holds ".tmp-": what an interrupted atomic write would leave.
std::vector<std::string> temp_files(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp-") != std::string::npos) found.push_back(name);
  }
  return found;
}

// The diagram of the scenario, written once to a regular file.
const std::string& reference_svg() {
  static const std::string svg = [] {
    const std::string path = test::make_temp_dir() + "/ref.svg";
    const auto r = test::run_trainsim(run_args({"--svg", path}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return test::read_file(path);
  }();
  return svg;
}

TEST(Outputs, ThroughASymlinkToItsTargetKeepingTheLink) {
  const std::string dir = test::make_temp_dir();
  fs::create_directory(dir + "/real");
  fs::create_symlink("real/diagram.svg", dir + "/link.svg");  // dangling: the file it would make
  const auto r = test::run_trainsim(run_args({"--svg", dir + "/link.svg"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir + "/link.svg"));
  EXPECT_EQ(test::read_file(dir + "/real/diagram.svg"), reference_svg());
  // Again, now that the target exists and has its own mode: replaced in place, mode kept.
  ::chmod((dir + "/real/diagram.svg").c_str(), 0640);
  ASSERT_EQ(test::run_trainsim(run_args({"--svg", dir + "/link.svg"})).exit_code, 0);
  EXPECT_TRUE(fs::is_symlink(dir + "/link.svg"));
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/real/diagram.svg").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_TRUE(temp_files(dir).empty());
  EXPECT_TRUE(temp_files(dir + "/real").empty());
}

TEST(Outputs, IntoAFifoWithoutReplacingIt) {
  const std::string fifo = test::make_temp_dir() + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = test::read_file(fifo); });
  const auto r = test::run_trainsim(run_args({"--svg", fifo}));
  reader.join();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(received, reference_svg());
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(Outputs, DashIsStandardOutputInsteadOfTheReport) {
  const auto r = test::run_trainsim(run_args({"--svg", "-"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, reference_svg());
}

TEST(Outputs, CharacterDevicesAreWrittenNotReplaced) {
  const auto r = test::run_trainsim(run_args({"--svg", "/dev/null", "--trace", "/dev/null"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const auto full = test::run_trainsim(run_args({"--trace", "/dev/full"}));
  EXPECT_EQ(full.exit_code, 2);
  EXPECT_EQ(full.err, "trainsim: error: /dev/full: cannot write: No space left on device\n");
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
}

TEST(Outputs, TwoOutputsOnOnePathAreRefusedBeforeAnyWork) {
  const std::string dir = test::make_temp_dir();
  const std::string path = dir + "/x.json";
  auto r = test::run_trainsim(run_args({"--trace", path, "--dump-graph", path}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trainsim: error: --trace: writes the same file as --dump-graph (" + path +
                       "): give each output its own path\n");
  // The same file under another name: through a symlink, or the report inside --out DIR.
  fs::create_symlink("x.json", dir + "/alias.json");
  r = test::run_trainsim(run_args({"--svg", path, "--html", dir + "/alias.json"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--html: writes the same file as --svg"), std::string::npos) << r.err;
  r = test::run_trainsim(run_args({"--out", dir, "--trace", dir + "/./report.json"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--trace: writes the same file as --out"), std::string::npos) << r.err;
  r = test::run_trainsim(run_args({"--svg", "-", "--html", "-"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(path));
}

TEST(Outputs, ADirectoryIsNamedAsOne) {
  const std::string dir = test::make_temp_dir();
  const auto r = test::run_trainsim(run_args({"--svg", dir}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trainsim: error: " + dir + ": is a directory\n");
}

// Killed at reproducible random moments of a run that replaces three files: each is the previous
// file or the complete new one, never a mix. SIGINT leaves no temp file. SIGKILL cannot be held
// off for the two calls that name a replacement and rename it over the old file: a kill between
// them leaves that temp name, `<file>.tmp-<pid>-<n>` of the killed run, and the next write of the
// file removes it.
TEST(Outputs, KillAtRandomMomentsLeavesWholeFilesAndNoTemp) {
  const std::string dir = test::make_temp_dir();
  const std::vector<std::string> names = {"t.json", "d.svg", "p.html"};
  const auto args =
      run_args({"--trace", dir + "/t.json", "--svg", dir + "/d.svg", "--html", dir + "/p.html"});
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(test::run_trainsim(args).exit_code, 0);
  const double whole =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::map<std::string, std::string> complete;
  for (const auto& n : names) complete[n] = test::read_file(dir + "/" + n);
  std::mt19937 random(17);
  std::uniform_real_distribution<double> moment(0.0, 1.2 * whole);
  for (int i = 0; i < 12; ++i) {
    for (const auto& n : names) test::write_file(dir + "/" + n, "previous " + n);
    auto running = test::start_trainsim(args);
    std::this_thread::sleep_for(std::chrono::duration<double>(moment(random)));
    ::kill(running.pid, i % 2 ? SIGKILL : SIGINT);
    running.finish();
    for (const auto& n : names) {
      const std::string now = test::read_file(dir + "/" + n);
      EXPECT_TRUE(now == "previous " + n || now == complete[n]) << n << " after kill " << i;
    }
    for (const auto& name : temp_files(dir)) {
      EXPECT_EQ(i % 2, 1) << name << " after SIGINT " << i;
      EXPECT_NE(name.find(".tmp-" + std::to_string(running.pid) + "-"), std::string::npos)
          << name << " after kill " << i;
    }
  }
  ASSERT_EQ(test::run_trainsim(args).exit_code, 0);
  EXPECT_TRUE(temp_files(dir).empty());
}

// A file written where none was is given its name directly (whole), and a dead run's leftover
// temp name beside it is removed; a live process's, and other names, are kept.
TEST(Outputs, ADeadRunsLeftoverTempIsRemovedByTheNextWrite) {
  const std::string dir = test::make_temp_dir();
  // Process ids are below 2^22 on Linux: 4,999,999 runs nowhere.
  test::write_file(dir + "/d.svg.tmp-4999999-0", "left by a killed run");
  test::write_file(dir + "/d.svg.tmp-" + std::to_string(::getpid()) + "-0", "a live process's");
  test::write_file(dir + "/d.svg.tmp-notes", "not a temp name of ours");
  ASSERT_EQ(test::run_trainsim(run_args({"--svg", dir + "/d.svg"})).exit_code, 0);
  EXPECT_EQ(test::read_file(dir + "/d.svg"), reference_svg());
  EXPECT_FALSE(fs::exists(dir + "/d.svg.tmp-4999999-0"));
  EXPECT_TRUE(fs::exists(dir + "/d.svg.tmp-" + std::to_string(::getpid()) + "-0"));
  EXPECT_TRUE(fs::exists(dir + "/d.svg.tmp-notes"));
}

}  // namespace
}  // namespace trainsim
