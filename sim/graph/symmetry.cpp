#include "sim/graph/symmetry.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/collective/flows.hpp"
#include "sim/collective/group_shape.hpp"
#include "sim/plan/layout.hpp"

namespace trainsim {

namespace {

Members as_members(const std::vector<std::int64_t>& ranks) {
  return Members(ranks.begin(), ranks.end());
}

// The route classes and shares of a collective's flows, in a canonical order: two groups with
// the same price the same.
std::vector<std::pair<RouteClass, double>> flow_classes(const Topology& topo,
                                                        const std::vector<CollectiveFlow>& flows) {
  std::vector<std::pair<RouteClass, double>> out;
  for (const auto& f : flows) out.emplace_back(topo.route_class(f.src, f.dst), f.share);
  std::sort(out.begin(), out.end());
  return out;
}

// What a GPU's links carry for a collective: the kinds of link each flow it sends (or receives)
// leaves and arrives by, and its share, in a canonical order.
using LinkLoad = std::vector<std::tuple<LinkKind, LinkKind, double>>;
LinkLoad link_load(const Topology& topo, const std::vector<CollectiveFlow>& mine) {
  LinkLoad out;
  for (const auto& f : mine) {
    const auto [first, last] = route_ends(topo, f.src, f.dst);
    out.emplace_back(first, last, f.share);
  }
  return out;
}

class Checker {
 public:
  Checker(const Plan& plan, const Topology& topology, bool contention,
          const std::vector<std::int64_t>& embedding_stages)
      : plan_(plan),
        layout_(plan),
        topo_(topology),
        contention_(contention),
        embedding_stages_(embedding_stages),
        stage_offsets_(layout_.offset_residues({}, topo_.leaf_unit_gpus())) {}

  Symmetry run() {
    if (contention_ && topo_.leaves_can_bind()) {
      return {false, "oversubscribed leaves can slow some transfers and not others", {}};
    }
    Symmetry out;
    for (std::int64_t s = 0; s < plan_.pp; ++s) {
      if (!pipeline_routes_uniform(s) && out.chains.rep_offsets.empty()) {
        const std::string why = "stage " + std::to_string(s) +
                                "'s GPUs reach their pipeline neighbours over different routes";
        if (contention_) return {false, why, {}};
        out.chains = chain_classes();
      }
      for (const Dim d : Layout::kGroupDims) {
        if (auto why = groups_differ(s, d); !why.empty()) {
          return {
              false, "stage " + std::to_string(s) + "'s " + dim_name(d) + "-parallel " + why, {}};
        }
      }
    }
    for (std::int64_t s = 0; s < plan_.pp && !out.chains.rep_offsets.empty(); ++s) {
      for (const Dim d : Layout::kGroupDims) {
        if (!classes_mix_alike(s, d, out.chains)) {
          return {false,
                  "stage " + std::to_string(s) +
                      "'s GPUs reach their pipeline neighbours over different routes, and its " +
                      dim_name(d) + "-parallel groups mix them unlike one another",
                  {}};
        }
      }
    }
    return out;
  }

 private:
  static const char* dim_name(Dim d) { return info(d).prose; }

  // The pipeline neighbours of stage s's GPUs: one step either way (interleaving wraps around),
  // and in a stage of the embedding group its peers there.
  std::vector<std::int64_t> neighbour_steps(std::int64_t s) const {
    std::vector<std::int64_t> out;
    const bool ring = plan_.vp > 1 && plan_.pp > 1;
    if (s + 1 < plan_.pp || ring) out.push_back(1);
    if (s > 0 || ring) out.push_back(-1);
    if (std::find(embedding_stages_.begin(), embedding_stages_.end(), s) !=
        embedding_stages_.end()) {
      for (const auto t : embedding_stages_) {
        if (t != s) out.push_back(t - s);
      }
    }
    return out;
  }

  // A stage's GPUs all reach their neighbour `step` stages on by the same offset (the layout is
  // mixed-radix), and whether GPU g and g + offset share a node or a leaf depends on g only modulo
  // a leaf unit (gpus_per_node x nodes_per_leaf GPUs): one GPU per residue stands for the rest.
  bool pipeline_routes_uniform(std::int64_t s) const {
    const auto leader = layout_.stage_leader(s);
    for (auto step : neighbour_steps(s)) {
      const auto offset = layout_.neighbour(leader, Dim::kPP, step) - leader;
      const auto want = topo_.route_class(leader, leader + offset);
      for (const auto o : stage_offsets_) {
        const auto gpu = leader + o;
        assert(layout_.neighbour(gpu, Dim::kPP, step) == gpu + offset);
        if (topo_.route_class(gpu, gpu + offset) != want) return false;
      }
    }
    return true;
  }

  // The classes of pipeline chain: the stage offsets whose GPUs reach their neighbours (one step
  // either way, in every stage) over the same routes. One offset per residue modulo a leaf unit
  // stands for all with that residue; each class's replaying GPU is its least offset.
  ChainClasses chain_classes() const {
    ChainClasses cc;
    cc.modulus = topo_.leaf_unit_gpus();
    cc.class_of_residue.assign(static_cast<std::size_t>(cc.modulus), -1);
    std::vector<std::vector<RouteClass>> signatures;
    for (const auto o : stage_offsets_) {
      std::vector<RouteClass> sig;
      for (std::int64_t s = 0; s < plan_.pp; ++s) {
        const auto gpu = layout_.stage_leader(s) + o;
        for (auto step : neighbour_steps(s)) {
          sig.push_back(topo_.route_class(gpu, layout_.neighbour(gpu, Dim::kPP, step)));
        }
      }
      auto it = std::find(signatures.begin(), signatures.end(), sig);
      if (it == signatures.end()) {
        signatures.push_back(std::move(sig));
        cc.rep_offsets.push_back(o);
        it = signatures.end() - 1;
      }
      cc.class_of_residue[static_cast<std::size_t>(o % cc.modulus)] =
          static_cast<std::int32_t>(it - signatures.begin());
    }
    return cc;
  }

  // Whether every group along d in stage s holds the same classes as the groups of its members'
  // replaying GPUs, and each replaying GPU's group holds the replaying GPU of every class in it:
  // then each group's calls wait for the same classes in the replay as in the run.
  bool classes_mix_alike(std::int64_t s, Dim d, const ChainClasses& cc) const {
    if (unused(d)) return true;
    const auto leader = layout_.stage_leader(s);
    const auto classes_in = [&](const std::vector<std::int64_t>& members) {
      std::set<std::int32_t> in;
      for (const auto g : members) in.insert(cc.class_of(g - leader));
      return in;
    };
    std::vector<std::set<std::int32_t>> rep_classes;
    for (std::int64_t c = 0; c < cc.count(); ++c) {
      const auto members = layout_.collective_group(d, leader + cc.rep_offset(c));
      rep_classes.push_back(classes_in(members));
      for (const auto k : rep_classes.back()) {
        if (!std::binary_search(members.begin(), members.end(), leader + cc.rep_offset(k))) {
          return false;
        }
      }
    }
    for (const auto& members : layout_.groups_in_stage(d, s)) {
      const auto in = classes_in(members);
      for (const auto g : members) {
        if (in != rep_classes[static_cast<std::size_t>(cc.class_of(g - leader))]) return false;
      }
    }
    return true;
  }

  // Every group along d in stage s against the stage leader's, on the flows of the ring-family
  // algorithm its collectives run (the tree, where NCCL picks it, uses the same edges): why they
  // differ, or empty. A group of the leader's shape (a translate of it, group_shape.hpp) whose
  // shape has passed already passes unwalked: that keeps the check flat in data parallelism.
  // Whether the plan's graph calls groups along d: the stage-wide group only FP8's amax
  // reductions call (sim/cost/fp8_amax.hpp); a group never called cannot break the symmetry.
  bool unused(Dim d) const {
    return layout_.collective_size(d) < 2 ||
           (d == Dim::kStage && plan_.precision != Precision::kFP8);
  }

  std::string groups_differ(std::int64_t s, Dim d) {
    if (unused(d)) return {};
    const auto leader = static_cast<std::int32_t>(layout_.stage_leader(s));
    const auto rep = as_members(layout_.collective_group(d, leader));
    const auto rep_shape = canonical_shape(topo_, rep);
    auto& passed = passed_[static_cast<std::size_t>(d)];
    auto& offsets = group_offsets_[static_cast<std::size_t>(d)];
    // The stage's groups along d are the leader's moved by these offsets (the same in every
    // stage); those that agree modulo a leaf unit have one shape (group_shape.hpp), so one of each
    // stands for the rest.
    if (offsets.empty()) {
      offsets = layout_.offset_residues(Layout::collective_dims(d), topo_.leaf_unit_gpus());
    }
    Algorithm family = Algorithm::kRing;
    std::vector<std::pair<RouteClass, double>> want;
    LinkLoad load;
    for (const auto offset : offsets) {
      Members g = rep;
      for (auto& m : g) m += static_cast<std::int32_t>(offset);
      const bool same_shape = canonical_shape(topo_, g) == rep_shape;
      // Without contention a group prices as its shape does; with it, a shape passes once its
      // GPUs are found to load their links alike.
      if (same_shape && (!contention_ || passed.count(rep_shape) > 0)) continue;
      if (want.empty()) {
        family = ring_algorithm(topo_, rep);
        const auto rep_flows = collective_flows(topo_, rep, CollectiveKind::kAllReduce, family);
        want = flow_classes(topo_, rep_flows);
        if (contention_) {
          load = link_load(topo_, canonical_flows_by_member(topo_, rep_flows, true)[leader]);
        }
      }
      if (auto why = group_differs(g, family, want, load); !why.empty()) return why;
      if (same_shape) passed.insert(rep_shape);
    }
    return {};
  }

  std::string group_differs(const Members& g, Algorithm family,
                            const std::vector<std::pair<RouteClass, double>>& want,
                            const LinkLoad& load) const {
    const auto flows = collective_flows(topo_, g, CollectiveKind::kAllReduce, family);
    if (ring_algorithm(topo_, g) != family || flow_classes(topo_, flows) != want) {
      return "groups' rings cross different links";
    }
    if (!contention_) return {};
    auto sent = canonical_flows_by_member(topo_, flows, true);
    auto received = canonical_flows_by_member(topo_, flows, false);
    for (const auto gpu : g) {
      if (link_load(topo_, sent[gpu]) != load || link_load(topo_, received[gpu]) != load) {
        return "ring sends from some GPUs over NVLink and from others over the network, so "
               "their links carry different loads";
      }
    }
    return {};
  }

  const Plan& plan_;
  Layout layout_;
  const Topology& topo_;
  bool contention_;
  std::vector<std::int64_t> embedding_stages_;  // the stages whose GPUs sync the embedding
  // Offsets from a stage's leader to its GPUs, one per residue modulo a leaf unit; per
  // dimension, to its groups along it (built on first use). Every stage has the same.
  std::vector<std::int64_t> stage_offsets_;
  std::array<std::vector<std::int64_t>, kNumDims> group_offsets_;
  // Per dimension, the shapes whose groups have passed (a leader's group and its translates).
  std::array<std::set<Members>, kNumDims> passed_;
};

}  // namespace

Symmetry stage_symmetry(const Plan& plan, const Topology& topology, bool contention,
                        const std::vector<std::int64_t>& embedding_stages) {
  return Checker(plan, topology, contention, embedding_stages).run();
}

ReplayChoice choose_replay(const Plan& plan, const CostModel& costs, const Topology& topology,
                           bool contention, bool full) {
  if (full) return {Replay::kFull, "--full-simulation", {}};
  if (plan.world_size() == plan.pp) return {Replay::kFull, {}, {}};  // nothing to fold
  auto symmetry = stage_symmetry(plan, topology, contention, embedding_sync_stages(costs, plan.pp));
  if (symmetry.holds) return {Replay::kSymmetric, {}, std::move(symmetry.chains)};
  return {Replay::kFull, std::move(symmetry.reason), {}};
}

}  // namespace trainsim
