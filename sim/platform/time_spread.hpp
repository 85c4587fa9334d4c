#pragma once
// A measured kernel's run-to-run spread: its 10th and 90th percentile times over its median.

namespace trainsim {

struct TimeSpread {
  double p10 = 1;  // P10 time / median (<= 1)
  double p90 = 1;  // P90 time / median (>= 1)
  /// The P10-P90 width relative to the median.
  double width() const { return p90 - p10; }
};

}  // namespace trainsim
