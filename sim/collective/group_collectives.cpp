#include "sim/collective/group_collectives.hpp"

namespace trainsim {

GroupCollectives::GroupCollectives(const Topology& topology, Members members,
                                   CollectiveShapes& shapes)
    : topology_(&topology), members_(std::move(members)), shape_(&shapes.of(topology, members_)) {}

GroupCollectives::GroupCollectives(const Topology& topology, Members members)
    : topology_(&topology),
      members_(std::move(members)),
      own_(std::make_unique<CollectiveShapes>()),
      shape_(&own_->of(topology, members_)) {}

const std::vector<CollectiveFlow>& GroupCollectives::flows(CollectiveKind kind,
                                                           Algorithm algorithm) const {
  const auto i =
      static_cast<std::size_t>(kind) * kNumAlgorithms + static_cast<std::size_t>(algorithm);
  if (!built_[i]) {
    flows_[i] = collective_flows(*topology_, members_, kind, algorithm);
    built_[i] = true;
  }
  return flows_[i];
}

double send_recv_seconds(const Topology& topology, std::int64_t src, std::int64_t dst,
                         double bytes) {
  return topology.route_latency(src, dst) + whole_bytes(bytes) / topology.route_bandwidth(src, dst);
}

}  // namespace trainsim
