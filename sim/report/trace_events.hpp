#pragma once
// What one slice of the Chrome trace says: its name (pass, micro-batch, chunk and the blocks it
// runs; or the transfer's direction and peer, the collective's kind) and its details (`args`:
// FLOPs and where the kernel times come from, bytes, peer, group size).
#include <nlohmann/json.hpp>
#include <string>

#include "sim/cost/stage_cost.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/task_graph.hpp"
#include "sim/plan/partition.hpp"

namespace trainsim {

struct TraceEvent {
  std::string name;
  std::string category;
  nlohmann::ordered_json args;
};

/// A compute span of physical stage `stage`: `part` of `parts` when its pass runs in pieces
/// (each waiting for a parameter all-gather), 1 of 1 otherwise; `first_forward` when it is its
/// chunk's first forward of the step, which also quantises the chunk's FP8 weights.
TraceEvent compute_event(const Span& span, std::int64_t stage, const Partition& partition,
                         const CostModel& costs, std::int64_t part, std::int64_t parts,
                         bool first_forward);

/// A communication span of graph rank `rank`: a point-to-point transfer (one slice per message
/// of a batch) or a collective.
TraceEvent comm_event(const Span& span, const TaskGraph& graph, std::int32_t rank);

}  // namespace trainsim
