#pragma once
// Rank placement in Megatron-LM's default order: TP innermost, then DP, then PP, so a TP group
// shares a node's NVSwitch and DP/PP traffic goes over the NICs.
#include <cstdint>
#include <vector>

#include "sim/plan/plan.hpp"

namespace trainsim {

struct RankCoord {
  std::int64_t tp = 0;
  std::int64_t dp = 0;
  std::int64_t pp = 0;
};

class Placement {
 public:
  explicit Placement(const Plan& plan) : tp_(plan.tp), dp_(plan.dp), pp_(plan.pp) {}
  std::int64_t world_size() const { return tp_ * dp_ * pp_; }
  std::int64_t rank(const RankCoord& c) const { return c.tp + tp_ * (c.dp + dp_ * c.pp); }
  RankCoord coord(std::int64_t rank) const {
    return {rank % tp_, (rank / tp_) % dp_, rank / (tp_ * dp_)};
  }
  std::vector<std::int64_t> tp_group(std::int64_t dp, std::int64_t pp) const;
  std::vector<std::int64_t> dp_group(std::int64_t tp, std::int64_t pp) const;

 private:
  std::int64_t tp_;
  std::int64_t dp_;
  std::int64_t pp_;
};

}  // namespace trainsim
