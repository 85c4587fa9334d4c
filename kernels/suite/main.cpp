// trainsim_kernels: the CUDA kernel microbenchmark suite. Times the catalog's kernel shapes
// (GEMMs and grouped GEMMs through cuBLASLt, fused attention through cuDNN, the memory-bound
// kernels written in kernels/cuda/) and the log-spaced grids, and writes the kernel-timing
// database. See usage() below.
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/host/database.hpp"
#include "kernels/suite/suite.hpp"
#include "sim/core/error.hpp"
#include "sim/core/files.hpp"
#include "sim/core/version.hpp"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<std::int64_t> integers(const std::string& flag, const std::string& s) {
  std::vector<std::int64_t> out;
  for (const auto& item : split(s)) {
    try {
      out.push_back(std::stoll(item));
    } catch (const std::exception&) {
      trainsim::fail_input(flag, "must be integers separated by commas, got \"" + s + "\"");
    }
  }
  return out;
}

double seconds(const std::string& flag, const std::string& s) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size() && v >= 0 && v < 1e7) return v;
  } catch (const std::exception&) {
  }
  trainsim::fail_input(flag, "must be a number of seconds >= 0, got \"" + s + "\"");
}

std::pair<std::int64_t, std::int64_t> range(const std::string& flag, const std::string& s) {
  const auto colon = s.find(':');
  if (colon == std::string::npos) trainsim::fail_input(flag, "must be LO:HI, got \"" + s + "\"");
  const auto lo = integers(flag, s.substr(0, colon)), hi = integers(flag, s.substr(colon + 1));
  if (lo.size() != 1 || hi.size() != 1) trainsim::fail_input(flag, "must be LO:HI");
  return {lo[0], hi[0]};
}

const char* const kUsage = R"(usage:
  trainsim_kernels --out DB.json [options]   time the selected shapes, write the database
  trainsim_kernels --list [--json] [options] print the selected shapes (labels, or JSON)
  trainsim_kernels --merge OUT IN...         one database from several runs on the same GPU

what to time:
  --ops LIST             gemm, grouped_gemm, attention, memory or a memory op's name (all)
  --models LIST          catalog models whose shapes are timed (the whole catalog)
  --tps LIST             tensor parallelism of the catalog shapes (1,2,4,8)
  --seqs LIST            tokens per micro-batch of GEMMs and memory-bound ops (4096,8192)
  --attention-seqs LIST  attention sequence lengths (1024,...,32768)
  --gemm-grid LO:HI      m, n, k of the GEMM grid, powers of two (512:16384)
  --gemm-grid-per-octave N  1 (powers of two) or 2 (also 1.5x each) (2)
  --memory-grid LO:HI    elements of the memory-bound grid, powers of two (65536:268435456)
  --offgrid N            instead of the suite's shapes, N of each kernel family between the
                         grid points (always the same ones), to check the interpolation
  --accumulating-only    only the weight-gradient GEMMs that accumulate into FP32 (Megatron-LM's
                         gradient-accumulation fusion): to add them to a database measured
                         before the suite had them
  --accumulating-twins   their plain twins (the same GEMMs writing BF16), timed like them: the
                         accumulation's share without the spread between runs
  --max-shapes N         the first N selected shapes only
  --max-shapes-per-family N  the first N of each kernel family only (op, element type, pass,
                         head size, mask, groups): a quick check of every kernel

how:
  --warmup N             untimed launches first; the last one sizes the timed ones (3)
  --repetitions N        at most N timed launches per shape (50)
  --min-repetitions N    at least N, however long the kernel (10)
  --time-per-shape S     seconds of timed launches aimed at per shape (0.2)
  --time-budget S        shapes not started after S seconds are skipped (no limit)
  --checkpoint S         rewrite the database every S seconds while running (30)
  --resume               keep the entries --out already holds and time only the other shapes
  --benchmark_...        passed on to Google Benchmark

Every kernel is checked against a reference before it is timed; one that fails is reported on
stderr and in the database's notes, not timed, and the exit code is 1. SIGINT or SIGTERM stops
the run after the current shape and writes what was measured.
)";

namespace kernels = trainsim::kernels;
using trainsim::KernelDatabase;

using Setter = std::function<void(kernels::SuiteRun&, const std::string&, const std::string&)>;

int as_int(const std::string& flag, const std::string& value) {
  return static_cast<int>(integers(flag, value).at(0));
}

// Flags that take a value, and what each sets.
const std::map<std::string, Setter>& value_flags() {
  using R = kernels::SuiteRun;
  using S = const std::string&;
  static const std::map<std::string, Setter> flags = {
      {"--out", [](R& r, S, S v) { r.out = v; }},
      {"--ops", [](R& r, S, S v) { r.ops = split(v); }},
      {"--models", [](R& r, S, S v) { r.models = split(v); }},
      {"--tps", [](R& r, S f, S v) { r.shapes.tps = integers(f, v); }},
      {"--seqs", [](R& r, S f, S v) { r.shapes.gemm_seqs = integers(f, v); }},
      {"--attention-seqs", [](R& r, S f, S v) { r.shapes.attention_seqs = integers(f, v); }},
      {"--gemm-grid",
       [](R& r, S f, S v) {
         std::tie(r.shapes.gemm_grid_lo, r.shapes.gemm_grid_hi) = range(f, v);
       }},
      {"--memory-grid",
       [](R& r, S f, S v) {
         std::tie(r.shapes.memory_grid_lo, r.shapes.memory_grid_hi) = range(f, v);
       }},
      {"--gemm-grid-per-octave",
       [](R& r, S f, S v) {
         r.shapes.gemm_grid_per_octave = as_int(f, v);
         if (r.shapes.gemm_grid_per_octave != 1 && r.shapes.gemm_grid_per_octave != 2)
           trainsim::fail_input(f, "must be 1 or 2");
       }},
      {"--warmup", [](R& r, S f, S v) { r.warmup = as_int(f, v); }},
      {"--repetitions", [](R& r, S f, S v) { r.repetitions = as_int(f, v); }},
      {"--min-repetitions", [](R& r, S f, S v) { r.min_repetitions = as_int(f, v); }},
      {"--time-per-shape", [](R& r, S f, S v) { r.time_per_shape = seconds(f, v); }},
      {"--time-budget", [](R& r, S f, S v) { r.time_budget = seconds(f, v); }},
      {"--checkpoint", [](R& r, S f, S v) { r.checkpoint_seconds = seconds(f, v); }},
      {"--max-shapes", [](R& r, S f, S v) { r.max_shapes = integers(f, v).at(0); }},
      {"--max-shapes-per-family",
       [](R& r, S f, S v) { r.max_shapes_per_family = integers(f, v).at(0); }},
      {"--offgrid", [](R& r, S f, S v) { r.offgrid = integers(f, v).at(0); }},
  };
  return flags;
}

// Flags without a value.
const std::map<std::string, bool kernels::SuiteRun::*>& switches() {
  static const std::map<std::string, bool kernels::SuiteRun::*> flags = {
      {"--resume", &kernels::SuiteRun::resume},
      {"--accumulating-only", &kernels::SuiteRun::accumulating_only},
      {"--accumulating-twins", &kernels::SuiteRun::accumulating_twins},
      {"--list", &kernels::SuiteRun::list_only},
      {"--json", &kernels::SuiteRun::list_json},
  };
  return flags;
}

kernels::SuiteRun parse_run(const std::vector<std::string>& args) {
  using trainsim::fail_input;
  kernels::SuiteRun run;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (auto v = value_flags().find(a); v != value_flags().end()) {
      if (i + 1 >= args.size()) fail_input(a, "needs a value");
      v->second(run, a, args[++i]);
    } else if (auto sw = switches().find(a); sw != switches().end()) {
      run.*(sw->second) = true;
    } else if (a.rfind("--benchmark_", 0) == 0) {
      run.benchmark_args.push_back(a);
    } else {
      fail_input(a, "unknown flag (trainsim_kernels --help lists them)");
    }
  }
  if (run.out.empty() && !run.list_only) fail_input("--out", "is required (the database to write)");
  if (run.repetitions < 1) fail_input("--repetitions", "must be >= 1");
  if (run.min_repetitions < 1 || run.min_repetitions > run.repetitions)
    fail_input("--min-repetitions", "must be between 1 and --repetitions");
  if (run.warmup < 0) fail_input("--warmup", "must be >= 0");
  if (run.list_json && !run.list_only) fail_input("--json", "goes with --list");
  return run;
}

int merge(const std::vector<std::string>& args) {
  if (args.size() < 3) trainsim::fail_input("--merge", "needs OUT and at least one input database");
  std::vector<KernelDatabase> dbs;
  for (std::size_t i = 2; i < args.size(); ++i) {
    dbs.push_back(trainsim::load_kernel_database(args[i]));
  }
  trainsim::write_file_atomically(args[1],
                                  trainsim::kernel_database_json(kernels::merge_databases(dbs)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainsim;
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args[0] == "--merge") return merge(args);
    for (const auto& a : args) {
      if (a == "--version") {
        std::cout << version() << "\n";
        return 0;
      }
      if (a == "--help" || a == "-h") {
        std::cout << kUsage;
        return 0;
      }
    }
    return kernels::run_suite(parse_run(args));
  } catch (const InputError& e) {
    std::cerr << "trainsim_kernels: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "trainsim_kernels: " << e.what() << "\n";
    return 3;
  }
}
