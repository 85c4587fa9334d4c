#include <algorithm>
#include <cmath>

#include "sim/validate/validate.hpp"

namespace trainsim {

std::int64_t ValidationSet::expressed() const {
  return std::count_if(rows.begin(), rows.end(), [](const auto& r) { return !r.skipped; });
}

namespace {

// The mean of `of(row)` over the set's expressed rows; 0 when none.
template <typename Of>
double mean_over_expressed(const ValidationSet& set, Of of) {
  double sum = 0;
  for (const auto& r : set.rows) {
    if (!r.skipped) sum += of(r);
  }
  const auto n = set.expressed();
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

}  // namespace

double ValidationSet::mean_abs_error() const {
  return mean_over_expressed(*this, [](const ValidationRow& r) { return std::fabs(r.error()); });
}

double ValidationSet::mean_signed_error() const {
  return mean_over_expressed(*this, [](const ValidationRow& r) { return r.error(); });
}

const ValidationRow* ValidationSet::worst() const {
  const ValidationRow* worst = nullptr;
  for (const auto& r : rows) {
    if (r.skipped) continue;
    if (worst == nullptr || std::fabs(r.error()) > std::fabs(worst->error())) worst = &r;
  }
  return worst;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

namespace {

// Measured minus predicted without the overhead, over the expressed rows that fit it, `except`
// left out (nullptr: none).
std::vector<double> fit_residuals(const ValidationSet& set, const ValidationRow* except) {
  std::vector<double> residuals;
  for (const auto& r : set.rows) {
    if (&r != except && !r.skipped && r.fits_overhead) {
      residuals.push_back(r.measured - (r.predicted - set.allocated_overhead));
    }
  }
  return residuals;
}

}  // namespace

double ValidationSet::overhead_fit() const {
  return median(fit_residuals(*this, nullptr));
}

std::int64_t ValidationSet::overhead_fit_rows() const {
  return static_cast<std::int64_t>(fit_residuals(*this, nullptr).size());
}

std::pair<double, double> ValidationSet::leave_one_out_errors() const {
  double sum = 0;
  double max = 0;
  std::int64_t n = 0;
  for (const auto& held_out : rows) {
    if (held_out.skipped) continue;
    const double predicted =
        held_out.predicted - allocated_overhead + median(fit_residuals(*this, &held_out));
    const double error = std::fabs(predicted - held_out.measured) / held_out.measured;
    sum += error;
    max = std::max(max, error);
    ++n;
  }
  return {n == 0 ? 0.0 : sum / static_cast<double>(n), max};
}

std::pair<std::int64_t, std::int64_t> ValidationSet::in_band(const std::string& half) const {
  std::int64_t inside = 0, total = 0;
  for (const auto& r : rows) {
    if (r.skipped || (!half.empty() && r.half != half)) continue;
    ++total;
    if (band.holds(r.predicted, r.measured, r.kernel_spread)) ++inside;
  }
  return {inside, total};
}

ValidationSet::Errors ValidationSet::errors_of(const std::string& part,
                                               const std::string& half) const {
  Errors e;
  for (const auto& r : rows) {
    if (r.skipped || r.name.find(part) == std::string::npos) continue;
    if (!half.empty() && r.half != half) continue;
    ++e.rows;
    e.mean += std::fabs(r.error());
    e.max = std::max(e.max, std::fabs(r.error()));
  }
  if (e.rows > 0) e.mean /= static_cast<double>(e.rows);
  return e;
}

std::pair<double, double> ValidationSet::errors_without_overhead() const {
  double sum = 0;
  double max = 0;
  for (const auto& r : rows) {
    if (r.skipped) continue;
    const double error = std::fabs(r.predicted - allocated_overhead - r.measured) / r.measured;
    sum += error;
    max = std::max(max, error);
  }
  const auto n = expressed();
  return {n > 0 ? sum / static_cast<double>(n) : 0.0, max};
}

std::vector<std::pair<const ValidationRow*, double>> ValidationSet::after_step_residuals() const {
  std::vector<std::pair<const ValidationRow*, double>> out;
  for (const auto& r : rows) {
    if (!r.skipped && r.logs_after_step()) out.emplace_back(&r, r.after_step_residual());
  }
  return out;
}

double ValidationSet::after_step_median() const {
  std::vector<double> residuals;
  for (const auto& [row, d] : after_step_residuals()) residuals.push_back(d);
  return median(std::move(residuals));
}

std::vector<const ValidationRow*> ValidationSet::rows_whose_memory(MemoryFit fit) const {
  std::vector<const ValidationRow*> out;
  for (const auto& r : rows) {
    if (r.skipped || r.peak_bytes <= 0) continue;
    if (memory_fit(r.peak_bytes, r.peak_unfragmented_bytes, gpu_memory_bytes) == fit) {
      out.push_back(&r);
    }
  }
  return out;
}

}  // namespace trainsim
