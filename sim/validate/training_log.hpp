#pragma once
// What a Megatron-LM training log measured: the step time its iteration lines print ("elapsed
// time per iteration (ms): 1234.5", averaged over each logging interval by Megatron-LM) and the
// peak its memory reports print ("[Rank 3] (after 10 iterations) memory (MB) | allocated: ... |
// max allocated: 61234.5 | ..."; MB there is MiB), read from the log's text. Lines of other
// frameworks that print the same phrases read the same way.
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim {

struct TrainingLog {
  std::vector<double> iteration_ms;  // each logged elapsed time per iteration, in log order
  /// The leading values left out as warm-up: the first interval (it holds the first
  /// iterations' allocations, compilation and autotuning) where three or more were logged.
  std::int64_t warmup = 0;
  std::int64_t memory_reports = 0;
  double max_allocated_mib = 0;  // the largest "max allocated" of any memory report; 0: none

  bool has_step() const { return !iteration_ms.empty(); }
  /// The median of the logged times after the warm-up, in seconds.
  double step_time_s() const;
  /// "train.log (median of 9 logged iteration times, the first interval left out as warm-up;
  /// largest max allocated of 4 memory reports)".
  std::string source(const std::string& file) const;
};

/// The log's figures. InputError naming `file` where it holds neither an iteration time nor a
/// memory report, or a value that is not a positive number.
TrainingLog read_training_log(const std::string& text, const std::string& file);

}  // namespace trainsim
