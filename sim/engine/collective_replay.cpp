#include "sim/engine/collective_replay.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "sim/plan/layout.hpp"

namespace trainsim {

std::vector<GroupCollectives> group_collectives(const TaskGraph& graph, const Topology& topology,
                                                CollectiveShapes& shapes) {
  std::vector<GroupCollectives> out;
  out.reserve(graph.groups.size());
  for (const auto& g : graph.groups) out.emplace_back(topology, g.members, shapes);
  return out;
}

std::vector<std::vector<CollectiveStat>> collective_stats(
    const TaskGraph& graph, const Topology& topology, const std::vector<GroupCollectives>& groups) {
  std::vector<std::vector<CollectiveStat>> out(graph.ranks.size());
  std::map<std::int32_t, std::int64_t> nodes;  // group -> nodes it spans
  for (std::size_t r = 0; r < graph.ranks.size(); ++r) {
    std::map<std::tuple<std::int32_t, CollectiveKind, Algorithm>, CollectiveStat> by_key;
    for (const auto& op : graph.ranks[r].ops) {
      if (op.type != OpType::kCollective) continue;
      const auto& gc = groups[static_cast<std::size_t>(op.group)];
      const auto choice = gc.choose(op.collective, op.bytes, op.count);
      auto& st = by_key[{op.group, op.collective, choice.algorithm}];
      st.dim = graph.groups[static_cast<std::size_t>(op.group)].dim;
      st.kind = op.collective;
      st.algorithm = choice.algorithm;
      st.members = static_cast<std::int64_t>(gc.members().size());
      auto [it, added] = nodes.try_emplace(op.group, 0);
      if (added) {
        const auto& m = gc.members();
        it->second = group_span({m.begin(), m.end()}, topology.gpus_per_node()).nodes;
      }
      st.nodes = it->second;
      st.calls += op.count;
      st.bytes += op.bytes;
      st.seconds += choice.seconds;
    }
    for (auto& [key, st] : by_key) {
      if (st.seconds > 0) {
        st.bus_bandwidth = st.bytes / st.seconds * bus_factor(st.kind, st.members);
      }
      out[r].push_back(st);
    }
  }
  return out;
}

namespace {

// Whether each member of a symmetric graph's group is a replaying GPU, replaying itself (the
// embedding group's, between the stages' replaying GPUs): its flows then run as in a full graph.
bool members_replay_themselves(const TaskGraph& graph, const Group& group) {
  if (group.ranks.size() != group.members.size()) return false;
  for (std::size_t i = 0; i < group.ranks.size(); ++i) {
    if (graph.gpu_of(group.ranks[i]) != group.members[i]) return false;
  }
  return true;
}

}  // namespace

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
    if (group.ranks.empty() || members_replay_themselves(graph, group)) {
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
