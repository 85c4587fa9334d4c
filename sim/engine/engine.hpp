#pragma once
// Replays a task graph on a platform topology. Two back ends:
//  - simgrid: flow-level network with contention (SimGrid CM02, exact link sharing). SimGrid's
//    engine is a process singleton: one simulation per process.
//  - analytic: the same semantics without contention (each transfer gets its route's narrowest
//    link to itself) and without compute slowdown; any number per process, for sweeps. Both
//    agree exactly when nothing contends.
// Both record every rank's timeline (compute and communication spans); the statistics of a
// report are measured on that timeline.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/collective/group_shape.hpp"
#include "sim/engine/steady_state.hpp"
#include "sim/graph/task_graph.hpp"
#include "sim/platform/topology.hpp"

namespace trainsim {

struct ProgressCounter;  // sim/core/progress.hpp

enum class EngineKind { kSimGrid, kAnalytic };
const char* to_string(EngineKind kind);

/// A piece of a rank's timeline: a compute op running, or a transfer of some kind in progress
/// (from the moment it actually moves data, not from when the rank started waiting for a peer).
struct Span {
  double start = 0;
  double end = 0;
  bool compute = false;
  ComputeKind compute_kind = ComputeKind::kOther;
  CommKind comm = CommKind::kTP;
  std::int32_t microbatch = -1;
  std::int16_t chunk = 0;      // compute: the model chunk (virtual stage) of the op
  std::int16_t transfer = -1;  // point-to-point: the message's place in its op's batch
  std::uint32_t op = 0;        // the op's index in its rank's program
};

struct RankStats {
  double end_s = 0;      // when the rank's last op finished
  double compute_s = 0;  // time the compute stream ran kernels (its waits are communication)
  /// Exposed communication: time with a transfer of this kind in progress while the compute
  /// stream is idle (shared equally when several kinds are in progress at once).
  std::array<double, kNumCommKinds> comm_s{};
  /// All time with a transfer of this kind in progress, overlapped with compute or not.
  std::array<double, kNumCommKinds> comm_total_s{};
  /// Time with a transfer of this kind in progress while the compute stream is busy: hidden.
  std::array<double, kNumCommKinds> comm_hidden_s{};
  double comm_total() const;  // exposed, all kinds
};

/// The collectives of one kind a rank runs on one group in a step, with the algorithm NCCL
/// picks for them and their closed-form time on an idle network (sim/collective/).
struct CollectiveStat {
  Dim dim = Dim::kTP;  // the group's dimension (its traffic: comm_kind(dim))
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  std::int64_t members = 0;
  std::int64_t nodes = 0;    // nodes the group spans
  std::int64_t calls = 0;    // per step
  double bytes = 0;          // buffer per member, all calls
  double seconds = 0;        // all calls, uncontended
  double bus_bandwidth = 0;  // nccl-tests' bus bandwidth of these calls, bytes/s
};

struct SimResult {
  EngineKind engine = EngineKind::kAnalytic;
  double step_time_s = 0;                    // the last rank's end
  std::vector<RankStats> ranks;              // per replayed rank (a full replay's: per GPU)
  std::vector<std::vector<Span>> timelines;  // per replayed rank, when kept
  std::vector<std::vector<CollectiveStat>> collectives;  // per replayed rank, when listed
  /// Per GPU, the rank that replays it (a symmetric replay); empty: rank r is GPU r. Every GPU
  /// of a class behaves as its rank, so nothing is copied per GPU.
  std::vector<std::int32_t> replayed_by;
  std::uint64_t activities = 0;  // simulated activities (compute, transfers, synchronisations)
  /// With EngineOptions::steady: how much later each period of the steady state ends than the
  /// one before, where the window is periodic (sim/engine/steady_state.hpp); else empty.
  std::optional<double> steady_shift;

  std::int64_t num_gpus() const;
  std::int64_t rank_of(std::int64_t gpu) const;
  const RankStats& gpu_stats(std::int64_t gpu) const;
  /// The timeline of the rank that replays `gpu` (std::logic_error when none was kept).
  const std::vector<Span>& gpu_timeline(std::int64_t gpu) const;
};

struct EngineOptions {
  /// While a transfer of its GPU is in progress, a compute op runs this fraction slower
  /// (communication kernels take SMs and memory bandwidth); 0 = no interference. A receive
  /// waiting for its sender moves no data and does not count. SimGrid shares
  /// the GPU exactly; the analytic engine applies it to first order (a second replay).
  double compute_slowdown = 0;
  /// Keep every rank's spans in SimResult::timelines (statistics are computed either way).
  bool keep_timelines = false;
  /// List every rank's collectives in SimResult::collectives (what a report shows; a search
  /// pricing plans by their step time does without).
  bool list_collectives = false;
  /// Group shapes already priced on this platform (a search's plans share them); null: the
  /// replay prices its own.
  CollectiveShapes* shapes = nullptr;
  /// The step time alone (a search pricing plans): the analytic engine keeps no spans it does
  /// not need and leaves the per-rank statistics empty.
  bool step_only = false;
  /// Analytic engine: check this window of micro-batches for a periodic steady state and give
  /// its shift in SimResult::steady_shift (with a compute slowdown, both replays must be).
  std::optional<SteadyWindow> steady;
  /// Counts the ops replayed (a progress line reads it from another thread); null: none.
  ProgressCounter* progress = nullptr;
};

/// Structural checks before a replay: dependencies point to earlier ops of the same rank,
/// transfers pair up per (source, destination, channel), collective ops name groups their rank
/// replays, and every replaying rank of a group makes the same number of calls on it. Throws
/// std::invalid_argument describing the first problem.
void check_task_graph(const TaskGraph& graph);

/// A replay's result with its GPUs named: a symmetric replay's records which rank replays each
/// GPU; a full replay's is returned as it is.
SimResult name_gpus(const TaskGraph& graph, SimResult replayed);

/// Statistics of one rank from its spans (exposed communication by kind, compute time).
RankStats summarize(std::vector<Span> spans, double end_s);

SimResult simulate(const TaskGraph& graph, const Topology& topology, EngineKind engine,
                   const EngineOptions& options = {});
SimResult simulate_analytic(const TaskGraph& graph, const Topology& topology,
                            const EngineOptions& options = {});
/// Throws std::logic_error when called a second time in the same process.
SimResult simulate_simgrid(const TaskGraph& graph, const Topology& topology,
                           const EngineOptions& options = {});

/// For every collective op of every rank, its call number on its group (0, 1, ... in program
/// order): the k-th calls of all members form one collective.
std::vector<std::vector<std::int32_t>> collective_call_numbers(const TaskGraph& graph);

}  // namespace trainsim
