#include "sim/engine/collective.hpp"

#include <algorithm>
#include <cmath>

namespace trainsim {

double whole_bytes(double bytes) {
  return std::round(bytes);
}

double ring_flow_bytes(CollectiveKind kind, double bytes, std::int64_t members) {
  return whole_bytes(ring_bytes(kind, bytes, members));
}

double ring_collective_seconds(const Topology& topology, const Group& group, CollectiveKind kind,
                               double bytes, std::int64_t count) {
  const auto n = static_cast<std::int64_t>(group.members.size());
  if (n < 2) return 0.0;
  const double flow = ring_flow_bytes(kind, bytes, n);
  const double steps = static_cast<double>(ring_steps(kind, n) * count);
  double worst = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto src = group.members[static_cast<std::size_t>(i)];
    const auto dst = group.members[static_cast<std::size_t>((i + 1) % n)];
    const double lat = topology.route_latency(src, dst);
    // Same arithmetic as the SimGrid replay: one flow (latency + size / bandwidth), then the
    // remaining steps' latency.
    const double t = (lat + flow / topology.route_bandwidth(src, dst)) + (steps - 1.0) * lat;
    worst = std::max(worst, t);
  }
  return worst;
}

}  // namespace trainsim
