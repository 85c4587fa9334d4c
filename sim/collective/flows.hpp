#pragma once
// The flows of a collective: which GPU sends how much of the buffer to which, and the latency it
// pays, for each algorithm NCCL runs on a group of a given shape. Both engines replay these
// flows; the closed form (group_collectives.hpp) prices them.
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/collective/kinds.hpp"
#include "sim/platform/topology.hpp"

namespace trainsim {

struct CollectiveFlow {
  std::int32_t src = 0;  // GPUs
  std::int32_t dst = 0;
  double share = 0;      // bytes sent per byte of the collective's buffer
  double latency_s = 0;  // latency paid per call, this flow's own route included
};

using Members = std::vector<std::int32_t>;

/// NCCL's tree model (src/graph/tuning.cc): bus bandwidth 0.9 of the ring's, and algorithm
/// bandwidth half the bus bandwidth; latency 2 ((k - 1) intra-node + log2(nodes) inter-node hops).
inline constexpr double kTreeBusBandwidthFactor = 0.9;

/// A group's members node by node (nodes in order of first appearance, members in the group's
/// order); empty when its nodes do not all hold the same number of members.
std::vector<Members> members_by_node(const Topology& topology, const Members& members);

/// The ring-family algorithm of a group: rail rings where several nodes hold k > 1 members each,
/// else one ring.
Algorithm ring_algorithm(const Topology& topology, const Members& members);

/// The cycles of a ring-family algorithm. Rail rings: ring c enters each node at one member,
/// visits the node's others and leaves from the member at the position where it enters the next
/// node, so that its network edges join the same rail where the nodes' members line up; over the
/// k rings every member sends and receives exactly one ring's bytes over its NIC (only with two
/// members per node over an odd number of nodes does one edge change rails).
std::vector<Members> rings(const Topology& topology, const Members& members, Algorithm algorithm);

/// The algorithms NCCL may run a collective with on this group, its default first: the ring
/// family for all-reduce, all-gather, reduce-scatter and broadcast (one chain from the first
/// member), the tree too for all-reduce across several nodes, direct sends for all-to-all and
/// send/recv.
std::vector<Algorithm> algorithms(const Topology& topology, const Members& members,
                                  CollectiveKind kind);

std::vector<CollectiveFlow> collective_flows(const Topology& topology, const Members& members,
                                             CollectiveKind kind, Algorithm algorithm);

/// The kinds of the links a route leaves by and arrives by.
std::pair<LinkKind, LinkKind> route_ends(const Topology& topology, std::int32_t src,
                                         std::int32_t dst);

/// Every member's flows, those it sends (or receives), each list in a canonical order (by the
/// kinds of the links they leave and arrive by, then share), so that the j-th flows of members
/// that behave alike correspond.
std::unordered_map<std::int32_t, std::vector<CollectiveFlow>> canonical_flows_by_member(
    const Topology& topology, const std::vector<CollectiveFlow>& flows, bool sent);

/// For a member standing for all (symmetric replay): its canonical flows, each replaced by the
/// slowest corresponding flow of any member (narrowest route, then longest latency). Requires
/// every member to send flows of the same kinds.
std::vector<CollectiveFlow> slowest_corresponding_flows(const Topology& topology,
                                                        const std::vector<CollectiveFlow>& flows,
                                                        const Members& members, std::int32_t rep);

}  // namespace trainsim
