#pragma once
// The groups a pass talks on, as placed: the plan's first group along each dimension whose
// collectives run inside the passes (tensor, context and expert parallelism), on a topology holding
// the GPUs up to their last. What those calls are priced on outside a replay: every group along a
// dimension is a translate of the first, so all price alike.
#include <array>
#include <cstdint>
#include <memory>

#include "sim/collective/group_collectives.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"
#include "sim/platform/topology.hpp"

namespace trainsim {

class PassGroups {
 public:
  PassGroups(const Platform& platform, const Plan& plan);
  PassGroups(const PassGroups&) = delete;
  PassGroups& operator=(const PassGroups&) = delete;

  /// Members of the group along d; 1 where the plan has no such group.
  std::int64_t size(Dim d) const;
  bool has(Dim d) const { return groups_[index_of(d)] != nullptr; }
  /// NCCL's pick for `count` calls moving `bytes` in total on the group along d (which must
  /// exist), on an idle network.
  CollectiveChoice choose(Dim d, CollectiveKind kind, double bytes, std::int64_t count) const;

 private:
  std::unique_ptr<Topology> topology_;
  std::array<std::unique_ptr<GroupCollectives>, kNumDims> groups_;
};

/// The dimensions whose collectives run inside a pass (beside or after its kernels): tensor and
/// context parallelism's (hierarchical CP's two levels too), and the expert layers' token
/// dispatch (over EP, and over expert TP where it differs from TP).
inline constexpr std::array<Dim, 6> kPassDims = {Dim::kTP,  Dim::kCP,    Dim::kEP,
                                                 Dim::kETP, Dim::kCPA2A, Dim::kCPP2P};

}  // namespace trainsim
