#pragma once
// Replays a task graph on a platform topology. Two back ends:
//  - simgrid: flow-level network with contention (SimGrid CM02, exact link sharing). SimGrid's
//    engine is a process singleton: one simulation per process.
//  - analytic: the same semantics without contention (each transfer gets its route's narrowest
//    link to itself); any number per process, for sweeps. Both agree exactly when nothing
//    contends.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/graph/task_graph.hpp"
#include "sim/platform/topology.hpp"

namespace trainsim {

enum class EngineKind { kSimGrid, kAnalytic };
const char* to_string(EngineKind kind);

struct RankStats {
  double end_s = 0;      // when the rank's last op finished
  double compute_s = 0;  // time in compute ops
  /// Time with a transfer of this kind in progress and the rank waiting on it (not counting the
  /// wait for a peer to arrive, which is idle time).
  std::array<double, kNumCommKinds> comm_s{};
  double comm_total() const;
};

struct SimResult {
  EngineKind engine = EngineKind::kAnalytic;
  double step_time_s = 0;  // the last rank's end
  std::vector<RankStats> ranks;
  std::uint64_t activities = 0;  // simulated activities (compute, transfers, synchronisations)
};

/// Structural checks before a replay: transfers pair up per (source, destination, channel),
/// collective ops name groups their rank belongs to, and every member of a group makes the same
/// number of calls on it. Throws std::invalid_argument describing the first problem.
void check_task_graph(const TaskGraph& graph);

SimResult simulate(const TaskGraph& graph, const Topology& topology, EngineKind engine);
SimResult simulate_analytic(const TaskGraph& graph, const Topology& topology);
/// Throws std::logic_error when called a second time in the same process.
SimResult simulate_simgrid(const TaskGraph& graph, const Topology& topology);

}  // namespace trainsim
