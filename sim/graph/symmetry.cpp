#include "sim/graph/symmetry.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "sim/plan/placement.hpp"

namespace trainsim {

namespace {

// The route classes of a ring's edges, in a canonical order.
std::vector<RouteClass> ring_classes(const Topology& topo, const std::vector<std::int64_t>& ring) {
  std::vector<RouteClass> out;
  const auto n = ring.size();
  if (n < 2) return out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(topo.route_class(ring[i], ring[(i + 1) % n]));
  std::sort(out.begin(), out.end());
  return out;
}

// A ring member's own edge: over NVLink (true) or a NIC.
bool own_edge_in_node(const Topology& topo, const std::vector<std::int64_t>& ring,
                      std::size_t pos) {
  return topo.route_class(ring[pos], ring[(pos + 1) % ring.size()]) == RouteClass::kNode;
}

class Checker {
 public:
  Checker(const Plan& plan, const Topology& topology, bool contention)
      : plan_(plan), place_(plan), topo_(topology), contention_(contention) {}

  Symmetry run() {
    if (contention_ && topo_.leaves_can_bind()) {
      return {false, "oversubscribed leaves can slow some transfers and not others"};
    }
    for (std::int64_t s = 0; s < plan_.pp; ++s) {
      if (!pipeline_routes_uniform(s)) {
        return {false, "stage " + std::to_string(s) +
                           "'s GPUs reach their pipeline neighbours over different routes"};
      }
      for (const bool tp : {true, false}) {
        if (auto why = groups_differ(s, tp); !why.empty()) {
          return {false, "stage " + std::to_string(s) + "'s " + (tp ? "tensor" : "data") +
                             "-parallel " + why};
        }
      }
    }
    return {};
  }

 private:
  std::vector<std::int64_t> neighbours(std::int64_t s) const {
    std::vector<std::int64_t> out;
    const bool ring = plan_.vp > 1;  // interleaving wraps around
    if (s + 1 < plan_.pp || (ring && plan_.pp > 1)) out.push_back((s + 1) % plan_.pp);
    if (s > 0 || (ring && plan_.pp > 1)) out.push_back((s + plan_.pp - 1) % plan_.pp);
    return out;
  }

  bool pipeline_routes_uniform(std::int64_t s) const {
    for (auto peer : neighbours(s)) {
      const auto want = topo_.route_class(place_.rank({0, 0, s}), place_.rank({0, 0, peer}));
      for (std::int64_t d = 0; d < plan_.dp; ++d) {
        for (std::int64_t t = 0; t < plan_.tp; ++t) {
          if (topo_.route_class(place_.rank({t, d, s}), place_.rank({t, d, peer})) != want) {
            return false;
          }
        }
      }
    }
    return true;
  }

  // Every group of one kind in stage s against the representative's (tp 0, dp 0): why they
  // differ, or empty.
  std::string groups_differ(std::int64_t s, bool tp) const {
    const std::int64_t size = tp ? plan_.tp : plan_.dp;
    if (size < 2) return {};
    const std::int64_t count = tp ? plan_.dp : plan_.tp;
    const auto group = [&](std::int64_t i) {
      return tp ? place_.tp_group(i, s) : place_.dp_group(i, s);
    };
    const auto rep = group(0);
    const auto want = ring_classes(topo_, rep);
    const bool rep_in_node = own_edge_in_node(topo_, rep, 0);
    for (std::int64_t i = 0; i < count; ++i) {
      const auto g = group(i);
      if (ring_classes(topo_, g) != want) return "groups' rings cross different links";
      if (!contention_) continue;
      for (std::size_t pos = 0; pos < g.size(); ++pos) {
        if (own_edge_in_node(topo_, g, pos) != rep_in_node) {
          return "ring sends from some GPUs over NVLink and from others over the network, so "
                 "their links carry different loads";
        }
      }
    }
    return {};
  }

  const Plan& plan_;
  Placement place_;
  const Topology& topo_;
  bool contention_;
};

}  // namespace

Symmetry stage_symmetry(const Plan& plan, const Topology& topology, bool contention) {
  return Checker(plan, topology, contention).run();
}

ReplayChoice choose_replay(const Plan& plan, const Topology& topology, bool contention, bool full) {
  if (full) return {Replay::kFull, "--full-simulation"};
  if (plan.world_size() == plan.pp) return {Replay::kFull, {}};  // nothing to fold
  auto symmetry = stage_symmetry(plan, topology, contention);
  if (symmetry.holds) return {Replay::kSymmetric, {}};
  return {Replay::kFull, std::move(symmetry.reason)};
}

}  // namespace trainsim
