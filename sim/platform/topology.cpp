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
  links_.reserve(static_cast<std::size_t>(4 * num_gpus + 2 * num_leaves_));
  const double nvl_bw = p.nvlink_link_bandwidth();
  const double nic_bw = p.nic_link_bandwidth();
  for (std::int64_t g = 0; g < num_gpus; ++g) {
    links_.push_back({LinkKind::kNvlinkUp, g, nvl_bw, p.node.nvlink_latency});
    links_.push_back({LinkKind::kNvlinkDown, g, nvl_bw, p.node.nvlink_latency});
    links_.push_back({LinkKind::kNicUp, g, nic_bw, p.network.nic_latency});
    links_.push_back({LinkKind::kNicDown, g, nic_bw, p.network.nic_latency});
  }
  // A leaf aggregates one rail of nodes_per_leaf nodes; its spine side carries that many NICs'
  // bandwidth divided by the oversubscription.
  const double leaf_bw =
      nic_bw * static_cast<double>(nodes_per_leaf_) / p.network.leaf_oversubscription;
  for (std::int64_t l = 0; l < num_leaves_; ++l) {
    links_.push_back({LinkKind::kLeafUp, l, leaf_bw, p.network.spine_latency});
    links_.push_back({LinkKind::kLeafDown, l, leaf_bw, p.network.spine_latency});
  }
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
  std::vector<std::int32_t> r;
  route(src, dst, r);
  double lat = 0;
  for (auto l : r) lat += links_[static_cast<std::size_t>(l)].latency;
  return lat;
}

double Topology::route_bandwidth(std::int64_t src, std::int64_t dst) const {
  std::vector<std::int32_t> r;
  route(src, dst, r);
  double bw = links_[static_cast<std::size_t>(r.front())].bandwidth;
  for (auto l : r) bw = std::min(bw, links_[static_cast<std::size_t>(l)].bandwidth);
  return bw;
}

}  // namespace trainsim
