#pragma once
// A group's collectives priced without contention, and the algorithm NCCL would pick: the one
// whose closed form is least for the buffer size and the group's shape. A flow takes its latency
// plus its bytes over its fair share of its narrowest link, where the collective's own flows
// share the link equally; the collective ends with its slowest flow. The same flows replayed by
// SimGrid on an otherwise idle network take exactly that long. Prices come from the group's
// shape (group_shape.hpp), shared with every translate of the group.
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/collective/group_shape.hpp"

namespace trainsim {

class GroupCollectives {
 public:
  /// Priced from `shapes`, which must outlive it.
  GroupCollectives(const Topology& topology, Members members, CollectiveShapes& shapes);
  /// Priced from shapes of its own.
  GroupCollectives(const Topology& topology, Members members);

  const Members& members() const { return members_; }
  CollectiveChoice choose(CollectiveKind kind, double bytes, std::int64_t count) const {
    return shape_->choose(*topology_, kind, bytes, count);
  }
  double seconds(CollectiveKind kind, Algorithm algorithm, double bytes, std::int64_t count) const {
    return shape_->seconds(*topology_, kind, algorithm, bytes, count);
  }
  /// The group's own flows (built on first use: only a network replay needs them).
  const std::vector<CollectiveFlow>& flows(CollectiveKind kind, Algorithm algorithm) const;

 private:
  const Topology* topology_;
  Members members_;
  std::unique_ptr<CollectiveShapes> own_;
  const GroupShape* shape_;
  mutable std::array<std::vector<CollectiveFlow>, kNumCollectiveKinds * kNumAlgorithms> flows_;
  mutable std::array<bool, kNumCollectiveKinds * kNumAlgorithms> built_{};
};

/// A point-to-point message on an idle network: its route's latency plus its whole bytes over
/// the route's narrowest link.
double send_recv_seconds(const Topology& topology, std::int64_t src, std::int64_t dst,
                         double bytes);

}  // namespace trainsim
