#pragma once
// A group's collectives priced without contention, and the algorithm NCCL would pick: the one
// whose closed form is least for the buffer size and the group's shape. A flow takes its latency
// plus its bytes over its fair share of its narrowest link, where the collective's own flows
// share the link equally; the collective ends with its slowest flow. The same flows replayed by
// SimGrid on an otherwise idle network take exactly that long.
#include <array>
#include <cstdint>
#include <vector>

#include "sim/collective/flows.hpp"

namespace trainsim {

struct CollectiveChoice {
  Algorithm algorithm = Algorithm::kRing;
  double seconds = 0;
};

class GroupCollectives {
 public:
  GroupCollectives(const Topology& topology, Members members);

  const Members& members() const { return members_; }
  /// NCCL's pick: the least time among algorithms() (ties go to the ring family).
  CollectiveChoice choose(CollectiveKind kind, double bytes, std::int64_t count) const;
  /// `count` calls moving `bytes` in total, each paying the algorithm's latency.
  double seconds(CollectiveKind kind, Algorithm algorithm, double bytes, std::int64_t count) const;
  const std::vector<CollectiveFlow>& flows(CollectiveKind kind, Algorithm algorithm) const;

 private:
  // One flow's closed form: count x latency + whole(bytes x share) x (load / share) / bandwidth,
  // where load is the shares of the collective's flows on its narrowest link.
  struct Term {
    double latency_s = 0;
    double share = 0;
    double load = 0;
    double bandwidth = 0;
    auto operator<=>(const Term&) const = default;
  };
  struct Entry {
    bool built = false;
    std::vector<CollectiveFlow> flows;
    std::vector<Term> terms;  // distinct
  };

  Entry& entry(CollectiveKind kind, Algorithm algorithm) const;
  std::vector<Term> terms_of(const std::vector<CollectiveFlow>& flows) const;

  const Topology* topology_;
  Members members_;
  mutable std::array<Entry, kNumCollectiveKinds * kNumAlgorithms> cache_;
  mutable std::array<std::vector<Algorithm>, kNumCollectiveKinds> algorithms_;
};

/// A point-to-point message on an idle network: its route's latency plus its whole bytes over
/// the route's narrowest link.
double send_recv_seconds(const Topology& topology, std::int64_t src, std::int64_t dst,
                         double bytes);

}  // namespace trainsim
