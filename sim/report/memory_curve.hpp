#pragma once
// A stage's device memory over the step, on the replay's clock: its memory timeline (sim/memory)
// placed where the replay ran each pass. A pass's activations and transients appear when its
// first kernel starts and its frees when its last kernel ends, so the curve's maximum is the
// stage's peak_memory_bytes. The trace's memory counter and the HTML report's curves draw it.
#include <utility>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

/// A timeline's compute spans in start order (stable: the replay's order among equal starts),
/// what memory_curve() reads; the trace and the pipeline diagram draw them so too.
std::vector<Span> compute_in_start_order(const std::vector<Span>& timeline);

/// (seconds, device bytes) samples of physical stage `stage`, one per instant (the latest value
/// at a time wins), from the model state alone at 0. `compute`: the stage's compute spans (one GPU
/// of it) in start order. std::logic_error when they do not follow the stage's schedule (a bug).
std::vector<std::pair<double, double>> memory_curve(const Plan& plan, const Platform& platform,
                                                    const MemoryModel& memory, std::int64_t stage,
                                                    const std::vector<Span>& compute);

}  // namespace trainsim
