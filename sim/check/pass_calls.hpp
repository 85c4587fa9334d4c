#pragma once
// What a pass's collectives of one kind along one dimension take, priced on the stage's pass
// groups as the cost model prices them: what the detectors that weigh exposed all-to-alls (expert
// dispatch, context parallelism's head split) add up.
#include "sim/cost/pass_groups.hpp"
#include "sim/cost/stage_cost.hpp"

namespace trainsim {

/// Seconds per micro-batch of `pass`'s calls of `kind` along d.
inline double call_seconds(const PassCost& pass, Dim d, CollectiveKind kind,
                           const PassGroups& groups) {
  double s = 0;
  for (const auto& c : pass.collectives) {
    if (c.dim == d && c.kind == kind && c.count > 0) {
      s += groups.choose(c.dim, c.kind, c.bytes, c.count).seconds;
    }
  }
  return s;
}

}  // namespace trainsim
