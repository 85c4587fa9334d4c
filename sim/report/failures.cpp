#include "sim/report/failures.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace trainsim {

namespace {

// b = 1 - (R + C/2) / M: the share of the time between failures left after one restart and half
// a save.
double margin(double job_mtbf_s, double checkpoint_s, double restart_s) {
  return 1 - (restart_s + checkpoint_s / 2) / job_mtbf_s;
}

}  // namespace

std::optional<double> failure_slowdown(double interval_s, double job_mtbf_s, double checkpoint_s,
                                       double restart_s) {
  assert(interval_s > 0 && job_mtbf_s > 0 && checkpoint_s >= 0 && restart_s >= 0);
  const double denominator =
      margin(job_mtbf_s, checkpoint_s, restart_s) - interval_s / (2 * job_mtbf_s);
  if (denominator <= 0) return std::nullopt;
  return (1 + checkpoint_s / interval_s) / denominator;
}

double best_checkpoint_interval(double job_mtbf_s, double checkpoint_s, double restart_s) {
  const double b = margin(job_mtbf_s, checkpoint_s, restart_s);
  if (b <= 0) return 0;
  const double c = checkpoint_s;
  return std::sqrt(c * c + 2 * job_mtbf_s * b * c) - c;
}

std::optional<FailureCost> failure_cost(const TrainingBudget& budget, double training_s,
                                        double step_s, std::int64_t gpus) {
  if (!budget.gpu_mtbf_hours) return std::nullopt;
  assert(training_s > 0 && step_s > 0 && gpus > 0);
  FailureCost f;
  f.gpu_mtbf_hours = *budget.gpu_mtbf_hours;
  f.gpus = gpus;
  const double job_mtbf_s = f.job_mtbf_s();
  f.checkpoint_s = budget.checkpoint_s.value_or(0.0);
  f.restart_s = budget.restart_s.value_or(0.0);
  // The whole steps either side of T*, one at least and no more than the run holds.
  const double run_steps = std::max(1.0, std::round(training_s / step_s));
  const double best = best_checkpoint_interval(job_mtbf_s, f.checkpoint_s, f.restart_s) / step_s;
  std::optional<double> least;
  for (const double k : {std::floor(best), std::ceil(best)}) {
    const double steps = std::clamp(k, 1.0, run_steps);
    const auto slowdown = failure_slowdown(steps * step_s, job_mtbf_s, f.checkpoint_s, f.restart_s);
    if (slowdown && (!least || *slowdown < *least)) {
      least = slowdown;
      f.interval_steps = static_cast<std::int64_t>(steps);
    }
  }
  if (!least) {
    f.finishes = false;
    return f;
  }
  f.interval_s = static_cast<double>(f.interval_steps) * step_s;
  f.seconds = training_s * *least;
  f.failures = f.seconds / job_mtbf_s;
  f.lost = 1 - 1 / *least;
  f.gpu_hours = f.seconds * static_cast<double>(gpus) / 3600.0;
  if (budget.price_per_gpu_hour) f.cost = f.gpu_hours * *budget.price_per_gpu_hour;
  return f;
}

}  // namespace trainsim
