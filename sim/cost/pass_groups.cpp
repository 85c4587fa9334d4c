#include "sim/cost/pass_groups.hpp"

#include <algorithm>
#include <cassert>

#include "sim/plan/layout.hpp"

namespace trainsim {

PassGroups::PassGroups(const Platform& platform, const Plan& plan) {
  const Layout layout(plan);
  std::int64_t last = 0;
  std::array<Members, kNumDims> members;
  for (const Dim d : kPassDims) {
    if (layout.collective_size(d) < 2) continue;
    for (auto r : layout.group(d, 0)) {
      members[index_of(d)].push_back(static_cast<std::int32_t>(r));
      last = std::max(last, r);
    }
  }
  if (last == 0) return;
  topology_ = std::make_unique<Topology>(platform, last + 1);
  for (const Dim d : kPassDims) {
    auto& m = members[index_of(d)];
    if (!m.empty()) groups_[index_of(d)] = std::make_unique<GroupCollectives>(*topology_, m);
  }
}

std::int64_t PassGroups::size(Dim d) const {
  const auto& g = groups_[index_of(d)];
  return g ? static_cast<std::int64_t>(g->members().size()) : 1;
}

CollectiveChoice PassGroups::choose(Dim d, CollectiveKind kind, double bytes,
                                    std::int64_t count) const {
  const auto& g = groups_[index_of(d)];
  assert(g);
  return g->choose(kind, bytes, count);
}

}  // namespace trainsim
