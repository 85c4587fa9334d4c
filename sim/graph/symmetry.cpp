#include "sim/graph/symmetry.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "sim/plan/layout.hpp"

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
      : plan_(plan), layout_(plan), topo_(topology), contention_(contention) {}

  Symmetry run() {
    if (contention_ && topo_.leaves_can_bind()) {
      return {false, "oversubscribed leaves can slow some transfers and not others"};
    }
    for (std::int64_t s = 0; s < plan_.pp; ++s) {
      if (!pipeline_routes_uniform(s)) {
        return {false, "stage " + std::to_string(s) +
                           "'s GPUs reach their pipeline neighbours over different routes"};
      }
      for (const Dim d : layout_.order()) {
        if (d == Dim::kPP) continue;
        if (auto why = groups_differ(s, d); !why.empty()) {
          return {false, "stage " + std::to_string(s) + "'s " + dim_name(d) + "-parallel " + why};
        }
      }
    }
    return {};
  }

 private:
  static const char* dim_name(Dim d) {
    switch (d) {
      case Dim::kTP:
        return "tensor";
      case Dim::kCP:
        return "context";
      case Dim::kEP:
        return "expert";
      case Dim::kDP:
        return "data";
      case Dim::kPP:
        return "pipeline";
    }
    return "?";
  }

  // The pipeline neighbours of stage s's GPUs: one step either way (interleaving wraps around).
  std::vector<std::int64_t> neighbour_steps(std::int64_t s) const {
    std::vector<std::int64_t> out;
    const bool ring = plan_.vp > 1 && plan_.pp > 1;
    if (s + 1 < plan_.pp || ring) out.push_back(1);
    if (s > 0 || ring) out.push_back(-1);
    return out;
  }

  bool pipeline_routes_uniform(std::int64_t s) const {
    const auto leader = layout_.stage_leader(s);
    for (auto step : neighbour_steps(s)) {
      const auto want = topo_.route_class(leader, layout_.neighbour(leader, Dim::kPP, step));
      for (const auto gpu : layout_.stage_ranks(s)) {
        if (topo_.route_class(gpu, layout_.neighbour(gpu, Dim::kPP, step)) != want) return false;
      }
    }
    return true;
  }

  // Every group along d in stage s against the stage leader's: why they differ, or empty.
  std::string groups_differ(std::int64_t s, Dim d) const {
    if (layout_.size(d) < 2) return {};
    const auto rep = layout_.group(d, layout_.stage_leader(s));
    const auto want = ring_classes(topo_, rep);
    const bool rep_in_node = own_edge_in_node(topo_, rep, 0);
    for (const auto& g : layout_.groups_in_stage(d, s)) {
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
  Layout layout_;
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
