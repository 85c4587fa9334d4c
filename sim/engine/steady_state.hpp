#pragma once
// Periodicity of a replay's steady state. In the middle of a pipeline schedule every micro-batch
// (or every group of `period` micro-batches, interleaved) runs the same ops with the same
// durations, and the replay is a max-plus recursion: each op ends at the latest of what it waits
// for plus its own time. Once every op of a window of micro-batches long enough to hold every
// micro-batch in flight ends exactly `shift` later than the same op `period` micro-batches
// earlier, the state the next micro-batches start from is the previous one moved by `shift`, so
// every later period repeats it: a step with n more periods in its steady state ends n x shift
// later, the warm-up and cool-down unchanged. A search prices a long step from a short one that
// way (sim/evaluate/), and replays the whole step where the window is not periodic.
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/graph/task_graph.hpp"

namespace trainsim {

/// Micro-batches [first, last) are compared with those `period` later.
struct SteadyWindow {
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::int64_t period = 1;
};

/// The shift when every rank's ops of micro-batch k + period (k in the window) match those of k
/// one for one (same kind, duration and stretch, same group and bytes) and each ends `shift`
/// after its counterpart, to a relative 1e-12 of the step; nullopt otherwise. `done`: per rank
/// and op, its end; `stretch`: per rank and op, the time added to a compute op (empty: none).
std::optional<double> steady_shift(const TaskGraph& graph,
                                   const std::vector<std::vector<double>>& done,
                                   const std::vector<std::vector<double>>& stretch,
                                   const SteadyWindow& window);

}  // namespace trainsim
