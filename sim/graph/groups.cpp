#include "sim/graph/groups.hpp"

#include <cassert>
#include <limits>
#include <map>

namespace trainsim {

std::int32_t as_i32(std::int64_t v) {
  assert(v >= 0 && v <= std::numeric_limits<std::int32_t>::max());
  return static_cast<std::int32_t>(v);
}

namespace {

// Whether a pass or the step's end calls the stage-wide group (FP8 amax reductions, the expert
// biases' counts): only then is it built.
bool calls_stage_group(const CostModel& costs) {
  for (const StageCost& sc : costs.stages) {
    if (sc.expert_bias_sync_bytes > 0) return true;
    for (const PassCost* pass : {&sc.forward, &sc.backward, &sc.backward_input}) {
      for (const CollectiveLoad& load : pass->collectives) {
        if (load.dim == Dim::kStage) return true;
      }
    }
  }
  return false;
}

std::int32_t add_group(Dim d, const std::vector<std::int64_t>& members, TaskGraph& g) {
  Group grp;
  grp.dim = d;
  for (auto r : members) grp.members.push_back(as_i32(r));
  g.groups.push_back(std::move(grp));
  return as_i32(static_cast<std::int64_t>(g.groups.size()) - 1);
}

// The embedding groups: each GPU of the stages holding the word embedding or a copy of it with
// its peers at the same place in the others; in a symmetric graph, one per class of pipeline
// chain (its members stand at one offset in every stage), replayed by that class's rank of each
// of those stages.
void add_embedding_groups(const Layout& layout, const CostModel& costs, const ChainClasses* chains,
                          TaskGraph& g, std::vector<GroupIds>& ids) {
  const auto stages = embedding_sync_stages(costs, layout.size(Dim::kPP));
  if (stages.size() < 2) return;
  const std::size_t e = index_of(Dim::kEmbedding);
  if (!chains) {
    for (const auto r : layout.stage_ranks(stages.front())) {
      const auto members = layout.pipeline_peers(r, stages);
      const auto id = add_group(Dim::kEmbedding, members, g);
      for (const auto m : members) ids[static_cast<std::size_t>(m)][e] = id;
    }
    return;
  }
  const std::int64_t classes = chains->count();
  for (std::int64_t c = 0; c < classes; ++c) {
    const auto leader = layout.stage_leader(stages.front());
    const auto id = add_group(Dim::kEmbedding,
                              layout.pipeline_peers(leader + chains->rep_offset(c), stages), g);
    for (const auto s : stages) {
      const std::int64_t rank = s * classes + c;
      g.groups[static_cast<std::size_t>(id)].ranks.push_back(as_i32(rank));
      ids[static_cast<std::size_t>(rank)][e] = id;
    }
  }
}

}  // namespace

std::vector<GroupIds> add_groups(const Layout& layout, const CostModel& costs,
                                 const ChainClasses* chains, TaskGraph& g) {
  const bool stage_group = calls_stage_group(costs);
  const std::int64_t stages = layout.size(Dim::kPP);
  const std::int64_t classes = chains ? chains->count() : 1;
  std::vector<GroupIds> ids(
      static_cast<std::size_t>(chains ? stages * classes : layout.world_size()));
  for (auto& i : ids) i.fill(-1);
  for (std::int64_t s = 0; s < stages; ++s) {
    for (const Dim d : Layout::kGroupDims) {
      if (layout.collective_size(d) < 2 || (d == Dim::kStage && !stage_group)) continue;
      if (!chains) {
        for (const auto& members : layout.groups_in_stage(d, s)) {
          const auto id = add_group(d, members, g);
          for (auto r : members) ids[static_cast<std::size_t>(r)][index_of(d)] = id;
        }
        continue;
      }
      std::map<std::vector<std::int64_t>, std::int32_t> made;  // members -> group
      for (std::int64_t c = 0; c < classes; ++c) {
        const auto members =
            layout.collective_group(d, layout.stage_leader(s) + chains->rep_offset(c));
        auto [at, fresh] = made.try_emplace(members, -1);
        if (fresh) at->second = add_group(d, members, g);
        const std::int64_t rank = s * classes + c;
        g.groups[static_cast<std::size_t>(at->second)].ranks.push_back(as_i32(rank));
        ids[static_cast<std::size_t>(rank)][index_of(d)] = at->second;
      }
    }
  }
  add_embedding_groups(layout, costs, chains, g, ids);
  return ids;
}

}  // namespace trainsim
