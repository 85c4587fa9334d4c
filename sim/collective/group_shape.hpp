#pragma once
// A group's collectives priced once per shape. Groups that are translates of one another on the
// cluster have the same flows up to renaming GPUs, so they take the same time: a translate by
// whole leaf units (gpus_per_node x nodes_per_leaf GPUs) keeps every node, leaf and route class;
// one within the nodes (every member moves the same number of GPUs along, none past its node's
// last) keeps them too, moving each flow onto the next rail. The eight data-parallel groups of a
// stage, and the same groups in every stage of a large cluster, are one shape: pricing them costs
// one walk of one group, however large data parallelism grows.
#include <array>
#include <map>
#include <memory>
#include <vector>

#include "sim/collective/flows.hpp"

namespace trainsim {

/// The group moved to the lowest translate of its class: no member on a rail below the first,
/// and its first member in the first leaf unit. Groups with the same canonical shape price alike.
Members canonical_shape(const Topology& topology, const Members& members);

struct CollectiveChoice {
  Algorithm algorithm = Algorithm::kRing;
  double seconds = 0;
};

/// Closed-form prices of one canonical shape, built on first use. Holds no topology: every call
/// names the one the shape lies on (any topology of the same platform).
class GroupShape {
 public:
  explicit GroupShape(Members canonical) : members_(std::move(canonical)) {}

  const Members& members() const { return members_; }
  /// NCCL's pick: the least time among algorithms() (ties go to the ring family).
  CollectiveChoice choose(const Topology& topology, CollectiveKind kind, double bytes,
                          std::int64_t count) const;
  /// `count` calls moving `bytes` in total, each paying the algorithm's latency.
  double seconds(const Topology& topology, CollectiveKind kind, Algorithm algorithm, double bytes,
                 std::int64_t count) const;

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
    std::vector<Term> terms;  // distinct
  };

  const std::vector<Term>& terms(const Topology& topology, CollectiveKind kind,
                                 Algorithm algorithm) const;
  static std::vector<Term> terms_of(const Topology& topology,
                                    const std::vector<CollectiveFlow>& flows);

  // The last choices made, by a hash of their arguments: a replay asks the same few calls of a
  // group once per micro-batch.
  struct Recent {
    CollectiveKind kind = CollectiveKind::kAllReduce;
    double bytes = -1;
    std::int64_t count = -1;
    CollectiveChoice choice;
  };

  Members members_;
  mutable std::array<Recent, 8> recent_;
  mutable std::array<Entry, kNumCollectiveKinds * kNumAlgorithms> cache_;
  mutable std::array<std::vector<Algorithm>, kNumCollectiveKinds> algorithms_;
};

/// The shapes priced so far, for every group of a replay and every plan a search prices on one
/// platform (its GPUs per node and nodes per leaf fix which groups are translates).
class CollectiveShapes {
 public:
  const GroupShape& of(const Topology& topology, const Members& members);
  std::size_t size() const { return shapes_.size(); }

 private:
  std::map<Members, std::unique_ptr<GroupShape>> shapes_;
  std::int64_t gpus_per_node_ = 0;
  std::int64_t nodes_per_leaf_ = 0;
};

}  // namespace trainsim
