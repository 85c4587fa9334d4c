#pragma once
// What each replaying GPU sends for a collective in the SimGrid replay, planned before the
// simulation starts (the zone must know every route and fold host up front). A fully replayed
// group: every member sends its own flows of the algorithm NCCL would pick. A symmetric group,
// replayed by one member for all: that member sends, for each of its flows, the slowest
// corresponding flow of any member moved onto its own links (a fold), so its links carry what
// every member's links carry and the collective ends with its slowest flow.
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/collective/group_collectives.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/task_graph.hpp"

namespace trainsim {

/// A transfer of another GPU (src -> dst) that `owner` replays on its own links (symmetric
/// simulation; Topology::folded_route).
struct Fold {
  std::int64_t owner = 0;
  std::int64_t src = 0;
  std::int64_t dst = 0;
};

/// A flow as the replaying GPU sends it: to GPU `dst`, or to fold host `fold`.
struct SentFlow {
  std::int64_t dst = -1;
  std::int64_t fold = -1;
  double share = 0;            // bytes per byte of the buffer
  double latency_s = 0;        // per call, the route's own latency included
  double route_latency_s = 0;  // what the network charges for it
};

/// Every group of a graph, ready to price its collectives from `shapes` (which must outlive them).
std::vector<GroupCollectives> group_collectives(const TaskGraph& graph, const Topology& topology,
                                                CollectiveShapes& shapes);

/// Every rank's collectives per step, grouped by group, kind and the algorithm NCCL picks.
std::vector<std::vector<CollectiveStat>> collective_stats(
    const TaskGraph& graph, const Topology& topology, const std::vector<GroupCollectives>& groups);

class CollectiveReplayPlan {
 public:
  CollectiveReplayPlan(const TaskGraph& graph, const Topology& topology,
                       const std::vector<GroupCollectives>& groups);

  const std::vector<Fold>& folds() const { return folds_; }
  /// GPU pairs the flows of fully replayed groups go between.
  const std::vector<std::pair<std::int64_t, std::int64_t>>& routes() const { return routes_; }
  /// What `gpu` sends for one call of `kind` run with `algorithm` on group `group`.
  const std::vector<SentFlow>& sent(std::int32_t group, CollectiveKind kind, Algorithm algorithm,
                                    std::int64_t gpu) const;

 private:
  using Key = std::tuple<std::int32_t, CollectiveKind, Algorithm>;
  void add_full(const Key& key, const std::vector<CollectiveFlow>& flows);
  void add_folded(const Key& key, const std::vector<CollectiveFlow>& flows, const Members& members,
                  std::int64_t owner);

  const Topology& topo_;
  std::vector<Fold> folds_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::int64_t> fold_index_;
  std::vector<std::pair<std::int64_t, std::int64_t>> routes_;
  std::map<Key, std::unordered_map<std::int64_t, std::vector<SentFlow>>> sent_;
};

}  // namespace trainsim
