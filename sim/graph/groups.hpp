#pragma once
// The groups a task graph's ranks call, and the helpers the builder shares with them: a full
// graph's every group, a symmetric one's groups of its replaying GPUs.
#include <array>
#include <cstdint>
#include <vector>

#include "sim/cost/stage_cost.hpp"
#include "sim/graph/builder.hpp"
#include "sim/graph/task_graph.hpp"
#include "sim/plan/layout.hpp"

namespace trainsim {

/// A rank's group per dimension: an index into TaskGraph::groups, or -1.
using GroupIds = std::array<std::int32_t, kNumDims>;

/// v as a 32-bit index (asserted to fit).
std::int32_t as_i32(std::int64_t v);

/// Adds every group the graph's ranks call, every collective dimension's, to g: all of them in a
/// full graph (`chains` null); in a symmetric one the groups of each stage's replaying GPUs (one
/// per chain class), each replayed by those of them it holds. The stage-wide group only where a
/// pass calls it; the embedding group where two stages hold the word embedding (or a copy of it).
/// Returns each rank's group per dimension (-1: none).
std::vector<GroupIds> add_groups(const Layout& layout, const CostModel& costs,
                                 const ChainClasses* chains, TaskGraph& g);

}  // namespace trainsim
