#include "sim/plan/placement.hpp"

namespace trainsim {

std::vector<std::int64_t> Placement::tp_group(std::int64_t dp, std::int64_t pp) const {
  std::vector<std::int64_t> g;
  for (std::int64_t t = 0; t < tp_; ++t) g.push_back(rank({t, dp, pp}));
  return g;
}

std::vector<std::int64_t> Placement::dp_group(std::int64_t tp, std::int64_t pp) const {
  std::vector<std::int64_t> g;
  for (std::int64_t d = 0; d < dp_; ++d) g.push_back(rank({tp, d, pp}));
  return g;
}

}  // namespace trainsim
