#pragma once
// What a training log measured, read from its text in the formats three frameworks print:
// - Megatron-LM: the step time of its iteration lines ("elapsed time per iteration (ms): 1234.5",
//   averaged over each logging interval) and the peak of its memory reports ("[Rank 3] (after 10
//   iterations) memory (MB) | allocated: ... | max allocated: 61234.5 | ..."; MB there is MiB);
// - nanotron: its iteration lines' "elapsed_time_per_iteration_ms: 1.26K" (or, in later versions,
//   "time_per_iteration_ms:"), which its human format rounds to three significant figures, and
//   the peak of its memory lines ("Peak allocated 61234.50MiB");
// - torchtitan: its step lines' "tps: 6,123", tokens per second per GPU over each logging
//   interval. Its memory figure is the caching allocator's reserve, not what tensors allocate, and
//   is not read.
// Lines of other frameworks that print the same phrases read the same way.
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim {

struct TrainingLog {
  std::vector<double> iteration_ms;          // each logged time per iteration, in log order
  std::vector<double> tokens_per_s_per_gpu;  // each logged throughput (torchtitan), in log order
  bool rounded = false;  // the times are nanotron's, rounded to three significant figures
  /// The leading values left out as warm-up: the first interval (it holds the first
  /// iterations' allocations, compilation and autotuning) where three or more were logged.
  std::int64_t warmup = 0;
  std::int64_t memory_reports = 0;
  double max_allocated_mib = 0;  // the largest "max allocated" of any memory report; 0: none

  /// Whether the log times its steps: by iteration times, else by throughput.
  bool has_step() const { return !iteration_ms.empty() || !tokens_per_s_per_gpu.empty(); }
  bool gives_throughput() const { return iteration_ms.empty() && !tokens_per_s_per_gpu.empty(); }
  /// The median of the logged times after the warm-up, in seconds (0 where none are logged).
  double step_time_s() const;
  /// The median of the logged tokens/s per GPU after the warm-up (0 where none are logged).
  double throughput_per_gpu() const;
  /// "train.log (median of 9 logged iteration times, the first interval left out as warm-up;
  /// largest max allocated of 4 memory reports)".
  std::string source(const std::string& file) const;
};

/// The log's figures. InputError naming `file` where it holds neither a step time, a throughput
/// nor a memory report, or a value that is not a positive number.
TrainingLog read_training_log(const std::string& text, const std::string& file);

}  // namespace trainsim
