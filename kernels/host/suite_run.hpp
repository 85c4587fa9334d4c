#pragma once
// What one run of the kernel suite measures and how: the selected shapes, launches per shape,
// time budget and checkpoints. Plain C++, tested without a GPU.
#include <string>
#include <vector>

#include "kernels/host/shapes.hpp"

namespace trainsim::kernels {

struct SuiteRun {
  SuiteOptions shapes;
  std::vector<std::string> models;  // catalog names; empty: the whole catalog
  std::vector<std::string> ops;     // gemm, grouped_gemm, attention, memory or an op name
  int warmup = 3;
  int repetitions = 50;            // at most, for kernels shorter than time_per_shape / repetitions
  int min_repetitions = 10;        // at least, however long the kernel
  double time_per_shape = 0.2;     // seconds of timed launches aimed at per shape
  double time_budget = 0;          // seconds; shapes not started by then are skipped (0: none)
  double checkpoint_seconds = 30;  // the database is rewritten this often while running
  std::size_t max_shapes = 0;      // 0: no limit (a quick run takes the first N)
  std::size_t max_shapes_per_family = 0;  // 0: no limit (a smoke run takes N of each kernel)
  std::size_t offgrid = 0;  // > 0: time offgrid_shapes(offgrid per family) instead of the suite
  std::string out;          // the database to write
  bool resume = false;      // keep the entries `out` already has; time the rest
  bool accumulating_only = false;   // only GEMMs accumulating into FP32 (GemmShape::accumulate)
  bool accumulating_twins = false;  // their plain twins instead (the same GEMMs writing BF16)
  bool list_only = false;
  bool list_json = false;                   // --list prints the shapes as a JSON array
  std::vector<std::string> benchmark_args;  // passed on to Google Benchmark
};

/// The shapes a run selects from `all` (ops, the accumulating GEMMs alone when asked, then at
/// most max_shapes_per_family of each kernel
/// family: op, element type, pass, head size, mask, groups; then at most max_shapes), in the
/// order they are timed.
std::vector<KernelShape> selected_shapes(const SuiteRun& run, const std::vector<KernelShape>& all);

/// Launches per shape: enough for `time_per_shape` at `seconds` per launch, within
/// [min_repetitions, repetitions].
int repetitions_for(const SuiteRun& run, double seconds);

/// The shapes as a JSON array of objects with the database's shape keys (op, dtype, m, ...).
std::string shapes_json(const std::vector<KernelShape>& shapes);

}  // namespace trainsim::kernels
