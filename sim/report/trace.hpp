#pragma once
// The replay as a Chrome trace (trace-event JSON: chrome://tracing, ui.perfetto.dev): for one GPU
// of each pipeline stage (tp 0, dp 0), each compute op and each transfer once, on a track per
// stream kind (tracks with nothing on them left out), named by pass, micro-batch, chunk and the
// blocks it runs, with its details in `args` (FLOPs and kernel time sources, bytes, peer, group),
// an arrow from each pipeline send to its receive, and the GPU's memory as a counter. The memory
// counter follows the stage's memory timeline (sim/memory) on the simulated clock: a pass's
// activations and transients appear when its first kernel starts and its frees when its last
// kernel ends, so the counter's maximum is the stage's peak_memory_bytes.
#include <string>

#include "sim/cost/stage_cost.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/task_graph.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

struct TraceInputs {
  const Plan& plan;
  const Platform& platform;
  const Partition& partition;
  const CostModel& costs;
  const TaskGraph& graph;
  /// Replayed with EngineOptions::keep_timelines.
  const SimResult& sim;
  const MemoryModel& memory;
};

/// std::logic_error when a stage's compute spans do not follow its schedule program (a bug, not
/// bad input).
std::string trace_json(const TraceInputs& in);

}  // namespace trainsim
