#pragma once
// Symmetric simulation: the GPUs of one pipeline stage run the same ops; when they also talk
// over the same kinds of links, one of them (tp 0, dp 0) replays the stage for all of them and
// each of its collectives is priced over its whole group. Whether a plan's layout allows it:
//  - every GPU of a stage reaches its pipeline neighbours (and, in a stage holding the word
//    embedding or a copy of it, its peers in the embedding group) over the same route class
//    (inside a node, under one leaf, through the spine), so the transfers take the same time; or,
//    without
//    contention, one GPU per class of pipeline chain replays them (a chain: the GPUs at one
//    offset from their stage's first GPU in every stage), where each group mixes the classes as
//    the replaying GPUs' groups do;
//  - every tensor- and data-parallel group of a stage has the same route classes on its ring as
//    the representative's group, so the collectives take the same time;
//  - with contention (SimGrid), also: each GPU's own ring edges are of the kinds (NVLink or NIC)
//    of the representative's, so each GPU's links carry the same load, and no oversubscribed
//    leaf can slow some transfers and not others.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/graph/builder.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/topology.hpp"

namespace trainsim {

struct Symmetry {
  bool holds = true;
  std::string reason;  // why not, for the report
  /// Without contention, a stage whose GPUs reach their pipeline neighbours over different routes
  /// is replayed by one GPU per class of pipeline chain, where every group of the stage mixes the
  /// classes as the replaying GPUs' groups do; empty: one GPU per stage.
  ChainClasses chains;
};

/// `embedding_stages`: the stages whose GPUs all-reduce the word embedding's gradient
/// (embedding_sync_stages(); empty where none do).
Symmetry stage_symmetry(const Plan& plan, const Topology& topology, bool contention,
                        const std::vector<std::int64_t>& embedding_stages);

struct ReplayChoice {
  Replay replay = Replay::kFull;
  std::string why_full;  // why every GPU is replayed, for the report; empty if nothing to say
  ChainClasses chains;   // a symmetric replay's classes of pipeline chain
};

/// The symmetric replay of the graph `costs` make where the layout allows it and no full one is
/// asked for (the stages that sync the word embedding come from `costs`).
ReplayChoice choose_replay(const Plan& plan, const CostModel& costs, const Topology& topology,
                           bool contention, bool full);

}  // namespace trainsim
