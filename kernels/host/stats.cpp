#include "kernels/host/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace trainsim::kernels {

namespace {

double sorted_quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double t = pos - static_cast<double>(lo);
  return sorted[lo] + t * (sorted[hi] - sorted[lo]);
}

}  // namespace

double quantile(std::vector<double> samples, double q) {
  if (samples.empty()) throw std::invalid_argument("quantile of no samples");
  if (!(q >= 0.0 && q <= 1.0)) throw std::invalid_argument("quantile outside [0, 1]");
  std::sort(samples.begin(), samples.end());
  return sorted_quantile(samples, q);
}

Summary summarize(const std::vector<double>& samples) {
  if (samples.empty()) throw std::invalid_argument("summary of no samples");
  std::vector<double> s = samples;
  std::sort(s.begin(), s.end());
  Summary out;
  out.count = s.size();
  out.min = s.front();
  out.max = s.back();
  out.p10 = sorted_quantile(s, 0.1);
  out.median = sorted_quantile(s, 0.5);
  out.p90 = sorted_quantile(s, 0.9);
  out.mean = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size());
  return out;
}

int rotating_sets(double set_bytes, double l2_bytes, double budget_bytes, int max_sets) {
  if (!(set_bytes > 0)) return 1;
  const double wanted = std::ceil(2.0 * l2_bytes / set_bytes);
  const double fit = std::floor(budget_bytes / set_bytes);
  const double sets = std::min({wanted, fit, static_cast<double>(max_sets)});
  return sets < 1 ? 1 : static_cast<int>(sets);
}

}  // namespace trainsim::kernels
