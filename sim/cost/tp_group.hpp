#pragma once
// A plan's first TP group as placed, on a topology holding the GPUs up to its last: what TP
// calls are priced on outside a replay (every TP group of a plan is a translate of it, so all
// price alike).
#include <cstdint>

#include "sim/collective/group_collectives.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"
#include "sim/platform/topology.hpp"

namespace trainsim {

class TpGroup {
 public:
  TpGroup(const Platform& platform, const Plan& plan);
  TpGroup(const TpGroup&) = delete;
  TpGroup& operator=(const TpGroup&) = delete;

  std::int64_t size() const { return static_cast<std::int64_t>(group_.members().size()); }
  /// NCCL's pick for `count` calls moving `bytes` in total, on an idle network.
  CollectiveChoice choose(CollectiveKind kind, double bytes, std::int64_t count) const {
    return group_.choose(kind, bytes, count);
  }

 private:
  TpGroup(const Platform& platform, Members members);

  Topology topology_;
  GroupCollectives group_;
};

}  // namespace trainsim
