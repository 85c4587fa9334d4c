#include "sim/collective/group_shape.hpp"

#include <algorithm>
#include <cassert>
#include <functional>
#include <limits>
#include <unordered_map>

namespace trainsim {

Members canonical_shape(const Topology& topology, const Members& members) {
  if (members.empty()) return {};
  const auto per_node = topology.gpus_per_node();
  const auto unit = topology.leaf_unit_gpus();
  std::int64_t lowest_rail = per_node;
  std::int64_t lowest = std::numeric_limits<std::int64_t>::max();
  for (const auto m : members) {
    lowest_rail = std::min<std::int64_t>(lowest_rail, m % per_node);
    lowest = std::min<std::int64_t>(lowest, m);
  }
  const std::int64_t shift = lowest_rail + (lowest - lowest_rail) / unit * unit;
  Members out;
  out.reserve(members.size());
  for (const auto m : members) out.push_back(static_cast<std::int32_t>(m - shift));
  return out;
}

const std::vector<GroupShape::Term>& GroupShape::terms(const Topology& topology,
                                                       CollectiveKind kind,
                                                       Algorithm algorithm) const {
  auto& e =
      cache_[static_cast<std::size_t>(kind) * kNumAlgorithms + static_cast<std::size_t>(algorithm)];
  if (!e.built) {
    e.terms = terms_of(topology, collective_flows(topology, members_, kind, algorithm));
    e.built = true;
  }
  return e.terms;
}

std::vector<GroupShape::Term> GroupShape::terms_of(const Topology& topology,
                                                   const std::vector<CollectiveFlow>& flows) {
  std::unordered_map<std::int32_t, double> load;  // link -> shares of the flows crossing it
  load.reserve(4 * flows.size());
  std::vector<std::int32_t> links;  // every flow's route, one after another
  std::vector<std::size_t> first(flows.size() + 1, 0);
  for (std::size_t i = 0; i < flows.size(); ++i) {
    topology.route(flows[i].src, flows[i].dst, links);
    first[i + 1] = links.size();
    for (std::size_t k = first[i]; k < links.size(); ++k) load[links[k]] += flows[i].share;
  }
  std::vector<Term> terms;
  terms.reserve(flows.size());
  for (std::size_t i = 0; i < flows.size(); ++i) {
    Term t{flows[i].latency_s, flows[i].share, 0, 0};
    double worst = -1;
    for (std::size_t k = first[i]; k < first[i + 1]; ++k) {
      const double bw = topology.link(links[k]).bandwidth;
      const double l = load[links[k]];
      if (l / bw > worst) {
        worst = l / bw;
        t.load = l;
        t.bandwidth = bw;
      }
    }
    terms.push_back(t);
  }
  std::sort(terms.begin(), terms.end());
  terms.erase(std::unique(terms.begin(), terms.end()), terms.end());
  return terms;
}

double GroupShape::seconds(const Topology& topology, CollectiveKind kind, Algorithm algorithm,
                           double bytes, std::int64_t count) const {
  double worst = 0;
  for (const auto& t : terms(topology, kind, algorithm)) {
    const double sent = whole_bytes(bytes * t.share) * (t.load / t.share);
    worst = std::max(worst, static_cast<double>(count) * t.latency_s + sent / t.bandwidth);
  }
  return worst;
}

CollectiveChoice GroupShape::choose(const Topology& topology, CollectiveKind kind, double bytes,
                                    std::int64_t count) const {
  const auto slot = (static_cast<std::size_t>(kind) * 31u + static_cast<std::size_t>(count) +
                     std::hash<double>{}(bytes)) %
                    recent_.size();
  Recent& r = recent_[slot];
  if (r.kind == kind && r.bytes == bytes && r.count == count) return r.choice;
  auto& algos = algorithms_[static_cast<std::size_t>(kind)];
  if (algos.empty()) algos = algorithms(topology, members_, kind);
  CollectiveChoice best{algos.front(), std::numeric_limits<double>::infinity()};
  for (const auto a : algos) {
    const double t = seconds(topology, kind, a, bytes, count);
    if (t < best.seconds) best = {a, t};
  }
  r = {kind, bytes, count, best};
  return best;
}

const GroupShape& CollectiveShapes::of(const Topology& topology, const Members& members) {
  if (shapes_.empty()) {
    gpus_per_node_ = topology.gpus_per_node();
    nodes_per_leaf_ = topology.nodes_per_leaf();
  }
  assert(gpus_per_node_ == topology.gpus_per_node() &&
         nodes_per_leaf_ == topology.nodes_per_leaf() && "one platform per cache");
  auto key = canonical_shape(topology, members);
  auto it = shapes_.find(key);
  if (it == shapes_.end()) {
    auto shape = std::make_unique<GroupShape>(key);
    it = shapes_.emplace(std::move(key), std::move(shape)).first;
  }
  return *it->second;
}

}  // namespace trainsim
