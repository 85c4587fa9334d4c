#pragma once
// The replay as a Chrome trace (trace-event JSON: chrome://tracing, ui.perfetto.dev): for one GPU
// of each pipeline stage (tp 0, dp 0), every compute pass and every transfer on a track per stream
// kind, and the GPU's memory as a counter. The memory counter follows the stage's memory timeline
// (sim/memory) on the simulated clock: a pass's activations and transients appear when its first
// kernel starts and its frees when its last kernel ends, so the counter's maximum is the stage's
// peak_memory_bytes.
#include <string>

#include "sim/engine/engine.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

/// `sim` must have been replayed with EngineOptions::keep_timelines. std::logic_error when a
/// stage's compute spans do not follow its schedule program (a bug, not bad input).
std::string trace_json(const Plan& plan, const Platform& platform, const SimResult& sim,
                       const MemoryModel& memory);

}  // namespace trainsim
