#include "sim/engine/collective_replay.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace trainsim {

std::vector<GroupCollectives> group_collectives(const TaskGraph& graph, const Topology& topology,
                                                CollectiveShapes& shapes) {
  std::vector<GroupCollectives> out;
  out.reserve(graph.groups.size());
  for (const auto& g : graph.groups) out.emplace_back(topology, g.members, shapes);
  return out;
}

CollectiveReplayPlan::CollectiveReplayPlan(const TaskGraph& graph, const Topology& topology,
                                           const std::vector<GroupCollectives>& groups)
    : topo_(topology) {
  std::set<Key> used;
  for (const auto& prog : graph.ranks) {
    for (const auto& op : prog.ops) {
      if (op.type != OpType::kCollective) continue;
      const auto& gc = groups[static_cast<std::size_t>(op.group)];
      used.insert(
          {op.group, op.collective, gc.choose(op.collective, op.bytes, op.count).algorithm});
    }
  }
  for (const auto& key : used) {
    const auto& [g, kind, algorithm] = key;
    const auto& group = graph.groups[static_cast<std::size_t>(g)];
    const auto& flows = groups[static_cast<std::size_t>(g)].flows(kind, algorithm);
    if (group.ranks.empty()) {
      add_full(key, flows);
    } else {
      if (group.ranks.size() != 1) {
        throw std::logic_error("a symmetric group is replayed by one rank");
      }
      add_folded(key, flows, group.members, graph.gpu_of(group.ranks[0]));
    }
  }
  std::sort(routes_.begin(), routes_.end());
  routes_.erase(std::unique(routes_.begin(), routes_.end()), routes_.end());
}

void CollectiveReplayPlan::add_full(const Key& key, const std::vector<CollectiveFlow>& flows) {
  auto& by_gpu = sent_[key];
  for (const auto& f : flows) {
    by_gpu[f.src].push_back({f.dst, -1, f.share, f.latency_s, topo_.route_latency(f.src, f.dst)});
    routes_.emplace_back(f.src, f.dst);
  }
}

void CollectiveReplayPlan::add_folded(const Key& key, const std::vector<CollectiveFlow>& flows,
                                      const Members& members, std::int64_t owner) {
  auto& mine = sent_[key][owner];
  for (const auto& f :
       slowest_corresponding_flows(topo_, flows, members, static_cast<std::int32_t>(owner))) {
    auto [it, added] =
        fold_index_.try_emplace({owner, f.src, f.dst}, static_cast<std::int64_t>(folds_.size()));
    if (added) folds_.push_back({owner, f.src, f.dst});
    mine.push_back({-1, it->second, f.share, f.latency_s, topo_.route_latency(f.src, f.dst)});
  }
}

const std::vector<SentFlow>& CollectiveReplayPlan::sent(std::int32_t group, CollectiveKind kind,
                                                        Algorithm algorithm,
                                                        std::int64_t gpu) const {
  static const std::vector<SentFlow> kNone;
  const auto it = sent_.find({group, kind, algorithm});
  if (it == sent_.end()) return kNone;
  const auto mine = it->second.find(gpu);
  return mine == it->second.end() ? kNone : mine->second;
}

}  // namespace trainsim
