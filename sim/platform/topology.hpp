#pragma once
// The cluster as links and O(1) routes, shared by both engines so they see the same network.
// GPUs are numbered node-major (gpu = node * gpus_per_node + local). Inside a node every GPU has
// an NVLink up and down link to a non-blocking NVSwitch. Across nodes GPU i uses NIC i ("rail"
// i), which plugs into the leaf switch of its rail and scalable unit; leaves of different rails
// or units meet through the spine, over one aggregated up and down link per leaf. Links are
// numbered, not stored: a link's kind, owner, bandwidth and latency follow from its number, so a
// topology of any size costs the same to build and to hold.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/platform/platform.hpp"

namespace trainsim {

enum class LinkKind { kNvlinkUp, kNvlinkDown, kNicUp, kNicDown, kLeafUp, kLeafDown };

struct LinkInfo {
  LinkKind kind;
  std::int64_t owner;  // GPU for NVLink and NIC links, leaf for leaf links
  double bandwidth;    // bytes/s
  double latency;      // seconds
};

std::string link_name(const LinkInfo& link);

/// How a route lies on the cluster: inside a node (NVSwitch), across nodes under one leaf, or
/// across leaves (through the spine).
enum class RouteClass { kNode, kLeaf, kSpine };

class Topology {
 public:
  Topology(const Platform& platform, std::int64_t num_gpus);

  std::int64_t num_gpus() const { return num_gpus_; }
  std::int64_t num_nodes() const { return num_nodes_; }
  std::int64_t num_leaves() const { return num_leaves_; }
  std::int64_t gpus_per_node() const { return gpus_per_node_; }
  std::int64_t nodes_per_leaf() const { return nodes_per_leaf_; }
  /// GPUs of a scalable unit (the nodes under one leaf): moving GPUs by a multiple of it keeps
  /// which of them share a node or a leaf.
  std::int64_t leaf_unit_gpus() const { return gpus_per_node_ * nodes_per_leaf_; }
  std::int64_t node_of(std::int64_t gpu) const { return gpu / gpus_per_node_; }
  std::int64_t rail_of(std::int64_t gpu) const { return gpu % gpus_per_node_; }
  std::int64_t leaf_of(std::int64_t gpu) const;

  /// Links 0 .. num_links() - 1: per GPU its NVLink up, NVLink down, NIC up and NIC down links
  /// (4 gpu + 0..3), then per leaf its spine up and down links.
  std::int64_t num_links() const { return 4 * num_gpus_ + 2 * num_leaves_; }
  LinkInfo link(std::int32_t index) const;
  /// Link indices from src to dst (src != dst), in order; at most 4.
  void route(std::int64_t src, std::int64_t dst, std::vector<std::int32_t>& out) const;
  double route_latency(std::int64_t src, std::int64_t dst) const;
  /// Bandwidth of the narrowest link on the route. Neither allocates.
  double route_bandwidth(std::int64_t src, std::int64_t dst) const;
  RouteClass route_class(std::int64_t src, std::int64_t dst) const;
  /// The route src -> dst moved onto `owner`'s own links: owner's up link of the kind the route
  /// starts with, the route's leaf links, owner's down link of the kind it ends with. Same kinds,
  /// latency and bandwidth as the route; used when owner replays the transfers of GPUs that
  /// behave as it does (symmetric simulation).
  void folded_route(std::int64_t owner, std::int64_t src, std::int64_t dst,
                    std::vector<std::int32_t>& out) const;
  /// Whether a leaf's spine links can carry more than the NICs under it can send: only then can
  /// they slow a transfer that its NICs would not (an oversubscribed leaf with several leaves).
  bool leaves_can_bind() const { return oversubscription_ > 1.0 && units_ > 1; }

 private:
  std::int32_t nvlink_up(std::int64_t gpu) const { return static_cast<std::int32_t>(4 * gpu); }
  std::int32_t nvlink_down(std::int64_t gpu) const {
    return static_cast<std::int32_t>(4 * gpu + 1);
  }
  std::int32_t nic_up(std::int64_t gpu) const { return static_cast<std::int32_t>(4 * gpu + 2); }
  std::int32_t nic_down(std::int64_t gpu) const { return static_cast<std::int32_t>(4 * gpu + 3); }
  std::int32_t leaf_up(std::int64_t leaf) const {
    return static_cast<std::int32_t>(4 * num_gpus_ + 2 * leaf);
  }
  std::int32_t leaf_down(std::int64_t leaf) const {
    return static_cast<std::int32_t>(4 * num_gpus_ + 2 * leaf + 1);
  }

  std::int64_t num_gpus_;
  std::int64_t gpus_per_node_;
  std::int64_t nodes_per_leaf_;
  std::int64_t num_nodes_;
  std::int64_t units_;  // scalable units: groups of nodes sharing one leaf per rail
  std::int64_t num_leaves_;
  double oversubscription_ = 1.0;
  double nvlink_bandwidth_ = 0;
  double nvlink_latency_ = 0;
  double nic_bandwidth_ = 0;
  double nic_latency_ = 0;
  double leaf_bandwidth_ = 0;
  double spine_latency_ = 0;
};

}  // namespace trainsim
