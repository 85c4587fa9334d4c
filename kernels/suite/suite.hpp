#pragma once
// The suite's driver: times every selected shape with Google Benchmark (manual time: one CUDA
// event pair per launch, after a correctness check and warm-up launches) and writes the
// kernel-timing database.
#include <string>
#include <vector>

#include "kernels/host/shapes.hpp"

namespace trainsim::kernels {

struct SuiteRun {
  SuiteOptions shapes;
  std::vector<std::string> models;  // catalog names; empty: the whole catalog
  std::vector<std::string> ops;     // gemm, attention, memory or memory op names; empty: all
  int warmup = 5;
  int repetitions = 30;
  std::size_t max_shapes = 0;  // 0: no limit (a quick run takes the first N)
  std::string out;             // the database to write
  bool list_only = false;
  std::vector<std::string> benchmark_args;  // passed on to Google Benchmark
};

/// Exit code: 0, or 1 when a correctness check failed (that shape is left out of the database).
int run_suite(const SuiteRun& run);

}  // namespace trainsim::kernels
