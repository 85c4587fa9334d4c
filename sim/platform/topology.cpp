#include "sim/platform/topology.hpp"

#include <algorithm>
#include <cassert>

namespace trainsim {

std::string link_name(const LinkInfo& link) {
  const char* kind = "";
  switch (link.kind) {
    case LinkKind::kNvlinkUp:
      kind = "nvlink_up";
      break;
    case LinkKind::kNvlinkDown:
      kind = "nvlink_down";
      break;
    case LinkKind::kNicUp:
      kind = "nic_up";
      break;
    case LinkKind::kNicDown:
      kind = "nic_down";
      break;
    case LinkKind::kLeafUp:
      kind = "leaf_up";
      break;
    case LinkKind::kLeafDown:
      kind = "leaf_down";
      break;
  }
  return std::string(kind) + "_" + std::to_string(link.owner);
}

Topology::Topology(const Platform& p, std::int64_t num_gpus)
    : num_gpus_(num_gpus),
      gpus_per_node_(p.node.gpus_per_node),
      nodes_per_leaf_(p.network.nodes_per_leaf) {
  assert(num_gpus > 0 && gpus_per_node_ > 0 && nodes_per_leaf_ > 0);
  num_nodes_ = (num_gpus + gpus_per_node_ - 1) / gpus_per_node_;
  units_ = (num_nodes_ + nodes_per_leaf_ - 1) / nodes_per_leaf_;
  num_leaves_ = units_ * gpus_per_node_;
  oversubscription_ = p.network.leaf_oversubscription;
  nvlink_bandwidth_ = p.nvlink_link_bandwidth();
  nvlink_latency_ = p.node.nvlink_latency;
  nic_bandwidth_ = p.nic_link_bandwidth();
  nic_latency_ = p.network.nic_latency;
  // A leaf aggregates one rail of nodes_per_leaf nodes; its spine side carries that many NICs'
  // bandwidth divided by the oversubscription.
  leaf_bandwidth_ = nic_bandwidth_ * static_cast<double>(nodes_per_leaf_) / oversubscription_;
  spine_latency_ = p.network.spine_latency;
}

LinkInfo Topology::link(std::int32_t index) const {
  assert(index >= 0 && index < num_links());
  const std::int64_t i = index;
  if (i >= 4 * num_gpus_) {
    const std::int64_t leaf = (i - 4 * num_gpus_) / 2;
    const bool up = (i - 4 * num_gpus_) % 2 == 0;
    return {up ? LinkKind::kLeafUp : LinkKind::kLeafDown, leaf, leaf_bandwidth_, spine_latency_};
  }
  static constexpr LinkKind kKinds[] = {LinkKind::kNvlinkUp, LinkKind::kNvlinkDown,
                                        LinkKind::kNicUp, LinkKind::kNicDown};
  const bool nvlink = i % 4 < 2;
  return {kKinds[i % 4], i / 4, nvlink ? nvlink_bandwidth_ : nic_bandwidth_,
          nvlink ? nvlink_latency_ : nic_latency_};
}

std::int64_t Topology::leaf_of(std::int64_t gpu) const {
  std::int64_t unit = node_of(gpu) / nodes_per_leaf_;
  return rail_of(gpu) * units_ + unit;
}

void Topology::route(std::int64_t src, std::int64_t dst, std::vector<std::int32_t>& out) const {
  assert(src != dst && src >= 0 && dst >= 0 && src < num_gpus_ && dst < num_gpus_);
  if (node_of(src) == node_of(dst)) {
    out.push_back(nvlink_up(src));
    out.push_back(nvlink_down(dst));
    return;
  }
  out.push_back(nic_up(src));
  std::int64_t ls = leaf_of(src);
  std::int64_t ld = leaf_of(dst);
  if (ls != ld) {
    out.push_back(leaf_up(ls));
    out.push_back(leaf_down(ld));
  }
  out.push_back(nic_down(dst));
}

RouteClass Topology::route_class(std::int64_t src, std::int64_t dst) const {
  if (node_of(src) == node_of(dst)) return RouteClass::kNode;
  return leaf_of(src) == leaf_of(dst) ? RouteClass::kLeaf : RouteClass::kSpine;
}

void Topology::folded_route(std::int64_t owner, std::int64_t src, std::int64_t dst,
                            std::vector<std::int32_t>& out) const {
  const std::size_t first = out.size();
  route(src, dst, out);
  const bool node = node_of(src) == node_of(dst);
  out[first] = node ? nvlink_up(owner) : nic_up(owner);
  out.back() = node ? nvlink_down(owner) : nic_down(owner);
}

double Topology::route_latency(std::int64_t src, std::int64_t dst) const {
  switch (route_class(src, dst)) {
    case RouteClass::kNode:
      return 2 * nvlink_latency_;
    case RouteClass::kLeaf:
      return 2 * nic_latency_;
    case RouteClass::kSpine:
      return 2 * nic_latency_ + 2 * spine_latency_;
  }
  return 0;
}

double Topology::route_bandwidth(std::int64_t src, std::int64_t dst) const {
  switch (route_class(src, dst)) {
    case RouteClass::kNode:
      return nvlink_bandwidth_;
    case RouteClass::kLeaf:
      return nic_bandwidth_;
    case RouteClass::kSpine:
      return std::min(nic_bandwidth_, leaf_bandwidth_);
  }
  return 0;
}

}  // namespace trainsim
