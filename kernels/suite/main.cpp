// trainsim_kernels: the CUDA kernel microbenchmark suite. Times the catalog's kernel shapes
// (GEMMs through cuBLASLt, fused attention through cuDNN, the memory-bound kernels written in
// kernels/cuda/) and the log-spaced grids, and writes the kernel-timing database.
//
//   trainsim_kernels --out platforms/h100-sxm/kernels.json [--ops gemm,attention,memory]
//       [--models llama3.1-8b,...] [--tps 1,2,4,8] [--seqs 4096,8192]
//       [--attention-seqs 1024,...,32768] [--gemm-grid 512:16384] [--memory-grid 65536:268435456]
//       [--warmup 5] [--repetitions 30] [--max-shapes N] [--list] [--benchmark_... flags]
//   trainsim_kernels --merge OUT IN...   one database from several runs on the same GPU
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/host/database.hpp"
#include "kernels/suite/suite.hpp"
#include "sim/core/error.hpp"
#include "sim/core/files.hpp"

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

std::pair<std::int64_t, std::int64_t> range(const std::string& flag, const std::string& s) {
  const auto colon = s.find(':');
  if (colon == std::string::npos) trainsim::fail_input(flag, "must be LO:HI, got \"" + s + "\"");
  const auto lo = integers(flag, s.substr(0, colon)), hi = integers(flag, s.substr(colon + 1));
  if (lo.size() != 1 || hi.size() != 1) trainsim::fail_input(flag, "must be LO:HI");
  return {lo[0], hi[0]};
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainsim;
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args[0] == "--merge") {
      if (args.size() < 3) fail_input("--merge", "needs OUT and at least one input database");
      std::vector<KernelDatabase> dbs;
      for (std::size_t i = 2; i < args.size(); ++i) dbs.push_back(load_kernel_database(args[i]));
      write_file_atomically(args[1], kernel_database_json(kernels::merge_databases(dbs)));
      return 0;
    }
    kernels::SuiteRun run;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= args.size()) fail_input(a, "needs a value");
        return args[++i];
      };
      if (a == "--out") {
        run.out = value();
      } else if (a == "--ops") {
        run.ops = split(value());
      } else if (a == "--models") {
        run.models = split(value());
      } else if (a == "--tps") {
        run.shapes.tps = integers(a, value());
      } else if (a == "--seqs") {
        run.shapes.gemm_seqs = integers(a, value());
      } else if (a == "--attention-seqs") {
        run.shapes.attention_seqs = integers(a, value());
      } else if (a == "--gemm-grid") {
        std::tie(run.shapes.gemm_grid_lo, run.shapes.gemm_grid_hi) = range(a, value());
      } else if (a == "--memory-grid") {
        std::tie(run.shapes.memory_grid_lo, run.shapes.memory_grid_hi) = range(a, value());
      } else if (a == "--warmup") {
        run.warmup = static_cast<int>(integers(a, value()).at(0));
      } else if (a == "--repetitions") {
        run.repetitions = static_cast<int>(integers(a, value()).at(0));
      } else if (a == "--max-shapes") {
        run.max_shapes = static_cast<std::size_t>(integers(a, value()).at(0));
      } else if (a == "--list") {
        run.list_only = true;
      } else if (a.rfind("--benchmark_", 0) == 0) {
        run.benchmark_args.push_back(a);
      } else {
        fail_input(a, "unknown flag (see the comment at the top of kernels/suite/main.cpp)");
      }
    }
    if (run.out.empty() && !run.list_only)
      fail_input("--out", "is required (the database to write)");
    if (run.repetitions < 1 || run.warmup < 0) fail_input("--repetitions", "must be >= 1");
    return kernels::run_suite(run);
  } catch (const InputError& e) {
    std::cerr << "trainsim_kernels: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "trainsim_kernels: " << e.what() << "\n";
    return 3;
  }
}
