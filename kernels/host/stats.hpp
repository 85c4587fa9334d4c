#pragma once
// Summary statistics of repeated timings: median and the 10th/90th percentiles (linear
// interpolation between order statistics, as numpy's default "linear" method).
#include <cstddef>
#include <vector>

namespace trainsim::kernels {

struct Summary {
  std::size_t count = 0;
  double min = 0;
  double p10 = 0;
  double median = 0;
  double p90 = 0;
  double max = 0;
  double mean = 0;
};

/// The q-quantile (0 <= q <= 1) of `samples`; throws std::invalid_argument when empty.
double quantile(std::vector<double> samples, double q);
Summary summarize(const std::vector<double>& samples);

/// How many copies of a kernel's inputs (`set_bytes` each) to rotate through so that repeated
/// launches read more than twice the L2 cache, not the cache: at least 1, and no more than fit
/// in `budget_bytes` nor `max_sets`.
int rotating_sets(double set_bytes, double l2_bytes, double budget_bytes, int max_sets = 64);

}  // namespace trainsim::kernels
