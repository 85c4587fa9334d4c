#pragma once
// Ring collectives as both engines model them: every member sends ring_bytes() to its successor
// in one bulk flow and pays ring_steps() x count route latencies; the collective starts when the
// last member arrives and ends for everyone when the slowest edge is done.
#include "sim/graph/task_graph.hpp"
#include "sim/platform/topology.hpp"

namespace trainsim {

/// Duration of a collective without contention: max over ring edges e of
/// steps * count * latency(e) + ring_bytes / bandwidth(e).
double ring_collective_seconds(const Topology& topology, const Group& group, CollectiveKind kind,
                               double bytes, std::int64_t count);

/// Bytes of one ring edge's bulk flow, rounded to whole bytes as the network simulates them.
double ring_flow_bytes(CollectiveKind kind, double bytes, std::int64_t members);

/// Whole bytes of a transfer, as the network simulates them.
double whole_bytes(double bytes);

}  // namespace trainsim
