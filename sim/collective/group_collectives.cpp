#include "sim/collective/group_collectives.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace trainsim {

GroupCollectives::GroupCollectives(const Topology& topology, Members members)
    : topology_(&topology), members_(std::move(members)) {}

GroupCollectives::Entry& GroupCollectives::entry(CollectiveKind kind, Algorithm algorithm) const {
  auto& e =
      cache_[static_cast<std::size_t>(kind) * kNumAlgorithms + static_cast<std::size_t>(algorithm)];
  if (!e.built) {
    e.flows = collective_flows(*topology_, members_, kind, algorithm);
    e.terms = terms_of(e.flows);
    e.built = true;
  }
  return e;
}

std::vector<GroupCollectives::Term> GroupCollectives::terms_of(
    const std::vector<CollectiveFlow>& flows) const {
  std::unordered_map<std::int32_t, double> load;  // link -> shares of the flows crossing it
  std::vector<std::vector<std::int32_t>> routes(flows.size());
  for (std::size_t i = 0; i < flows.size(); ++i) {
    topology_->route(flows[i].src, flows[i].dst, routes[i]);
    for (const auto l : routes[i]) load[l] += flows[i].share;
  }
  std::vector<Term> terms;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    Term t{flows[i].latency_s, flows[i].share, 0, 0};
    double worst = -1;
    for (const auto l : routes[i]) {
      const double bw = topology_->links()[static_cast<std::size_t>(l)].bandwidth;
      if (load[l] / bw > worst) {
        worst = load[l] / bw;
        t.load = load[l];
        t.bandwidth = bw;
      }
    }
    terms.push_back(t);
  }
  std::sort(terms.begin(), terms.end());
  terms.erase(std::unique(terms.begin(), terms.end()), terms.end());
  return terms;
}

double GroupCollectives::seconds(CollectiveKind kind, Algorithm algorithm, double bytes,
                                 std::int64_t count) const {
  double worst = 0;
  for (const auto& t : entry(kind, algorithm).terms) {
    const double sent = whole_bytes(bytes * t.share) * (t.load / t.share);
    worst = std::max(worst, static_cast<double>(count) * t.latency_s + sent / t.bandwidth);
  }
  return worst;
}

CollectiveChoice GroupCollectives::choose(CollectiveKind kind, double bytes,
                                          std::int64_t count) const {
  auto& algos = algorithms_[static_cast<std::size_t>(kind)];
  if (algos.empty()) algos = algorithms(*topology_, members_, kind);
  CollectiveChoice best{algos.front(), std::numeric_limits<double>::infinity()};
  for (const auto a : algos) {
    const double t = seconds(kind, a, bytes, count);
    if (t < best.seconds) best = {a, t};
  }
  return best;
}

const std::vector<CollectiveFlow>& GroupCollectives::flows(CollectiveKind kind,
                                                           Algorithm algorithm) const {
  return entry(kind, algorithm).flows;
}

double send_recv_seconds(const Topology& topology, std::int64_t src, std::int64_t dst,
                         double bytes) {
  return topology.route_latency(src, dst) + whole_bytes(bytes) / topology.route_bandwidth(src, dst);
}

}  // namespace trainsim
