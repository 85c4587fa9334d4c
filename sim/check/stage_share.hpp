#pragma once
// The stage where a per-stage cost takes the largest share of its stage's time: what the
// detectors that weigh such a cost (an exposed CP ring, a skewed expert load, exposed expert
// all-to-alls) report and compare with their threshold.
#include <cstddef>
#include <utility>

namespace trainsim {

struct StageShare {
  std::size_t stage = 0;  // index into the cost model's stages
  double share = 0;       // part / whole there; 0 when no stage has any part
  double part = 0;        // the cost there, seconds per micro-batch
};

/// Over stages 0 .. stages-1, the one whose part / whole is largest, `part_whole(s)` returning
/// both as a pair (a stage whose whole is 0 is passed over); the first such stage on a tie.
template <class PartWhole>
StageShare largest_share(std::size_t stages, PartWhole part_whole) {
  StageShare out;
  for (std::size_t s = 0; s < stages; ++s) {
    const auto [part, whole] = part_whole(s);
    if (whole > 0 && part / whole > out.share) out = {s, part / whole, part};
  }
  return out;
}

}  // namespace trainsim
