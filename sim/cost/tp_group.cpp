#include "sim/cost/tp_group.hpp"

#include <algorithm>
#include <utility>

#include "sim/plan/layout.hpp"

namespace trainsim {

namespace {

Members first_tp_group(const Plan& plan) {
  Members out;
  for (auto r : Layout(plan).group(Dim::kTP, 0)) out.push_back(static_cast<std::int32_t>(r));
  return out;
}

}  // namespace

TpGroup::TpGroup(const Platform& platform, const Plan& plan)
    : TpGroup(platform, first_tp_group(plan)) {}

TpGroup::TpGroup(const Platform& platform, Members members)
    : topology_(platform, *std::max_element(members.begin(), members.end()) + 1),
      group_(topology_, std::move(members)) {}

}  // namespace trainsim
