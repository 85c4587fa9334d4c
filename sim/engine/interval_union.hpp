#pragma once
#include <algorithm>
#include <utility>
#include <vector>

namespace trainsim {

/// Total length covered by a set of [start, end] intervals (sorts its argument).
inline double union_length(std::vector<std::pair<double, double>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0;
  double cur_start = 0;
  double cur_end = -1;
  bool open = false;
  for (const auto& [s, e] : intervals) {
    if (!open || s > cur_end) {
      if (open) total += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
      open = true;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (open) total += cur_end - cur_start;
  return total;
}

}  // namespace trainsim
