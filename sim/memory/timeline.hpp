#pragma once
// The activation memory of one GPU over a step, walked from the order in which its compute stream
// runs forward and backward passes: a forward allocates what its micro-batch keeps for the
// backward, the backward frees it. Nothing here knows a schedule by name: the walk takes any
// sequence of (pass, micro-batch, model chunk) steps, so interleaved and zero-bubble programs
// plug in as they are.
#include <cstdint>
#include <vector>

#include "sim/schedule/schedule.hpp"

namespace trainsim {

/// One pass on the compute stream. `chunk` is the model chunk (virtual stage) of the GPU.
struct ComputeStep {
  Pass pass = Pass::kForward;
  std::int64_t microbatch = 0;
  std::int64_t chunk = 0;
};

/// The compute steps of a stage program, in program order (exchanges left out).
std::vector<ComputeStep> compute_steps(const std::vector<ScheduleStep>& program);

/// Bytes one micro-batch of one model chunk holds on the GPU.
struct PassFootprint {
  double saved = 0;               // from the end of its forward to the end of its backward
  double forward_transient = 0;   // on top of `saved`, only while the forward runs
  double backward_transient = 0;  // on top of what is held, only while the backward runs
  /// --defer-embedding-wgrad-compute: what the first `deferrals` backwards keep to the step's
  /// end, the LM head's input and output gradient, for the weight gradients of the flush.
  double deferred = 0;
  std::int64_t deferrals = 0;
};

struct ActivationTimeline {
  std::vector<double> during_step;  // base + the most held while each compute step runs
  std::vector<double> after_step;   // base + activation bytes held after each compute step
  double peak = 0;                  // base + the most held at any moment, transients included
  std::int64_t peak_step = -1;      // index into the steps of the step during which it peaks
  std::int64_t peak_in_flight = 0;  // micro-batch chunks whose activations are held at the peak
  /// --defer-embedding-wgrad-compute: the deferred LM-head buffers held at the peak (part of it)
  /// and how many micro-batches' they are.
  double peak_deferred = 0;
  std::int64_t peak_deferrals = 0;
};

/// Walks `steps` with `footprints[chunk]` per micro-batch; `base` is what the GPU holds
/// throughout (model state, runtime buffers). Throws std::logic_error on a backward whose
/// forward has not run, or a chunk without a footprint (a bug in the program, not bad input).
ActivationTimeline walk_activations(const std::vector<ComputeStep>& steps,
                                    const std::vector<PassFootprint>& footprints, double base = 0);

}  // namespace trainsim
