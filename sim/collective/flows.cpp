#include "sim/collective/flows.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <tuple>

namespace trainsim {

namespace {

// Flows along the edges of cycles: every member sends its successor `share`, paying `steps`
// latencies of its own edge (or `fixed_latency` when given).
void cycle_flows(const Topology& topo, const std::vector<Members>& cycles, double share,
                 std::int64_t steps, double fixed_latency, std::vector<CollectiveFlow>& out) {
  for (const auto& ring : cycles) {
    const auto n = ring.size();
    for (std::size_t i = 0; n > 1 && i < n; ++i) {
      const auto a = ring[i], b = ring[(i + 1) % n];
      const double lat = fixed_latency >= 0 ? fixed_latency
                                            : static_cast<double>(steps) * topo.route_latency(a, b);
      out.push_back({a, b, share, lat});
    }
  }
}

// NCCL's tree latency over the ring edges' links: 2 ((k - 1) intra + log2(nodes) inter).
double tree_latency(const Topology& topo, const std::vector<Members>& cycles, std::int64_t k,
                    std::int64_t nodes) {
  double intra = 0, inter = 0;
  for (const auto& ring : cycles) {
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const auto a = ring[i], b = ring[(i + 1) % ring.size()];
      double& slot = topo.node_of(a) == topo.node_of(b) ? intra : inter;
      slot = std::max(slot, topo.route_latency(a, b));
    }
  }
  const auto log2_nodes =
      static_cast<double>(std::bit_width(static_cast<std::uint64_t>(nodes)) - 1);
  return 2.0 * (static_cast<double>(k - 1) * intra + log2_nodes * inter);
}

std::vector<CollectiveFlow> direct_flows(const Topology& topo, const Members& members,
                                         CollectiveKind kind) {
  std::vector<CollectiveFlow> out;
  if (kind == CollectiveKind::kSendRecv) {
    assert(members.size() == 2);
    out.push_back({members[0], members[1], 1.0, topo.route_latency(members[0], members[1])});
    return out;
  }
  const double share = 1.0 / static_cast<double>(members.size());
  for (const auto a : members) {
    for (const auto b : members) {
      if (a != b) out.push_back({a, b, share, topo.route_latency(a, b)});
    }
  }
  return out;
}

}  // namespace

std::pair<LinkKind, LinkKind> route_ends(const Topology& topology, std::int32_t src,
                                         std::int32_t dst) {
  std::vector<std::int32_t> route;
  topology.route(src, dst, route);
  return {topology.link(route.front()).kind, topology.link(route.back()).kind};
}

std::vector<Members> members_by_node(const Topology& topology, const Members& members) {
  std::vector<Members> nodes;
  std::unordered_map<std::int64_t, std::size_t> index;  // node -> position in `nodes`
  for (const auto gpu : members) {
    const auto [it, added] = index.try_emplace(topology.node_of(gpu), nodes.size());
    if (added) nodes.emplace_back();
    nodes[it->second].push_back(gpu);
  }
  for (const auto& n : nodes) {
    if (n.size() != nodes.front().size()) return {};
  }
  return nodes;
}

Algorithm ring_algorithm(const Topology& topology, const Members& members) {
  const auto nodes = members_by_node(topology, members);
  return nodes.size() > 1 && nodes.front().size() > 1 ? Algorithm::kRailRings : Algorithm::kRing;
}

std::vector<Members> rings(const Topology& topology, const Members& members, Algorithm algorithm) {
  if (algorithm != Algorithm::kRailRings) return {members};
  const auto nodes = members_by_node(topology, members);
  const auto m = nodes.size(), k = nodes.front().size();
  // Ring c enters node j at position c + offset[j] and leaves it from the position at which it
  // enters node j + 1: consecutive offsets differ, alternating 0, 1 (and 2 on the last of an odd
  // number of nodes, where a node holds more than two members).
  std::vector<std::size_t> offset(m);
  for (std::size_t j = 0; j < m; ++j) offset[j] = j % 2;
  if (m % 2 == 1 && k > 2) offset[m - 1] = 2;
  std::vector<Members> out(k);
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t j = 0; j < m; ++j) {
      const std::size_t entry = (c + offset[j]) % k;
      std::size_t exit = (c + offset[(j + 1) % m]) % k;
      if (exit == entry) exit = (entry + 1) % k;  // two per node over an odd number of nodes
      out[c].push_back(nodes[j][entry]);
      for (std::size_t t = 1; t < k; ++t) {
        const std::size_t pos = (entry + t) % k;
        if (pos != exit) out[c].push_back(nodes[j][pos]);
      }
      out[c].push_back(nodes[j][exit]);
    }
  }
  return out;
}

std::vector<Algorithm> algorithms(const Topology& topology, const Members& members,
                                  CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kSendRecv:
      return {Algorithm::kDirect};
    case CollectiveKind::kBroadcast:
      return {Algorithm::kRing};
    case CollectiveKind::kAllReduce:
      if (members_by_node(topology, members).size() > 1) {
        return {ring_algorithm(topology, members), Algorithm::kTree};
      }
      [[fallthrough]];
    default:
      return {ring_algorithm(topology, members)};
  }
}

std::vector<CollectiveFlow> collective_flows(const Topology& topology, const Members& members,
                                             CollectiveKind kind, Algorithm algorithm) {
  const auto n = static_cast<std::int64_t>(members.size());
  std::vector<CollectiveFlow> out;
  if (n < 2) return out;
  if (algorithm == Algorithm::kDirect) return direct_flows(topology, members, kind);
  if (kind == CollectiveKind::kBroadcast) {
    for (std::int64_t i = 0; i + 1 < n; ++i) {
      const auto a = members[static_cast<std::size_t>(i)];
      const auto b = members[static_cast<std::size_t>(i + 1)];
      out.push_back({a, b, 1.0, static_cast<double>(n - 1) * topology.route_latency(a, b)});
    }
    return out;
  }
  const auto family = algorithm == Algorithm::kTree ? ring_algorithm(topology, members) : algorithm;
  const auto cycles = rings(topology, members, family);
  const auto num_rings = static_cast<double>(cycles.size());
  if (algorithm == Algorithm::kTree) {
    const auto nodes = members_by_node(topology, members);
    const double latency =
        tree_latency(topology, cycles, static_cast<std::int64_t>(nodes.front().size()),
                     static_cast<std::int64_t>(nodes.size()));
    const double share = 2.0 / kTreeBusBandwidthFactor / num_rings;
    cycle_flows(topology, cycles, share, 0, latency, out);
    return out;
  }
  cycle_flows(topology, cycles, ring_bytes(kind, 1.0, n) / num_rings, ring_steps(kind, n), -1.0,
              out);
  return out;
}

std::unordered_map<std::int32_t, std::vector<CollectiveFlow>> canonical_flows_by_member(
    const Topology& topology, const std::vector<CollectiveFlow>& flows, bool sent) {
  std::unordered_map<std::int32_t, std::vector<CollectiveFlow>> out;
  for (const auto& f : flows) out[sent ? f.src : f.dst].push_back(f);
  for (auto& [gpu, mine] : out) {
    std::stable_sort(mine.begin(), mine.end(),
                     [&](const CollectiveFlow& x, const CollectiveFlow& y) {
                       return std::make_tuple(route_ends(topology, x.src, x.dst), x.share) <
                              std::make_tuple(route_ends(topology, y.src, y.dst), y.share);
                     });
  }
  return out;
}

std::vector<CollectiveFlow> slowest_corresponding_flows(const Topology& topology,
                                                        const std::vector<CollectiveFlow>& flows,
                                                        const Members& members, std::int32_t rep) {
  auto by_member = canonical_flows_by_member(topology, flows, true);
  auto out = by_member[rep];
  auto slower = [&](const CollectiveFlow& x, const CollectiveFlow& y) {  // x slower than y
    const double bx = topology.route_bandwidth(x.src, x.dst);
    const double by = topology.route_bandwidth(y.src, y.dst);
    return bx != by ? bx < by : x.latency_s > y.latency_s;
  };
  for (const auto gpu : members) {
    const auto& theirs = by_member[gpu];
    assert(theirs.size() == out.size());
    for (std::size_t j = 0; j < out.size() && j < theirs.size(); ++j) {
      if (slower(theirs[j], out[j])) out[j] = theirs[j];
    }
  }
  return out;
}

}  // namespace trainsim
