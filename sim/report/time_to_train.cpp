#include "sim/report/time_to_train.hpp"

#include <cassert>
#include <cmath>
#include <string>

#include "sim/core/format.hpp"
#include "sim/report/failures.hpp"

namespace trainsim {

std::optional<TimeToTrain> time_to_train(const TrainingBudget& budget, double tokens_per_step,
                                         double step_s, double p10_s, double p90_s,
                                         std::int64_t gpus) {
  if (!budget.tokens) return std::nullopt;
  const double tokens = *budget.tokens;
  assert(tokens > 0 && tokens <= TrainingBudget::kMaxTokens && tokens_per_step > 0 && gpus > 0);
  TimeToTrain t;
  t.tokens = tokens;
  t.tokens_per_step = tokens_per_step;
  // A step trains gbs x seq-len tokens whole: the last step that reaches the budget counts.
  t.steps = static_cast<std::int64_t>(std::ceil(tokens / tokens_per_step));
  const auto steps = static_cast<double>(t.steps);
  t.seconds = steps * step_s;
  t.p10_s = steps * p10_s;
  t.p90_s = steps * p90_s;
  t.gpu_hours = t.seconds * static_cast<double>(gpus) / 3600.0;
  if (budget.price_per_gpu_hour) t.cost = t.gpu_hours * *budget.price_per_gpu_hour;
  t.failures = failure_cost(budget, t.seconds, step_s, gpus);
  return t;
}

std::string failures_text(const FailureCost& f) {
  std::string s = "one every " + format_duration(f.job_mtbf_s()) + " (GPU MTBF " +
                  format_whole(f.gpu_mtbf_hours) + " h over " + format_grouped(f.gpus) + " GPUs)";
  const std::string costs = format_fixed(f.checkpoint_s, 1) + " s a save, " +
                            format_fixed(f.restart_s, 1) + " s a restart";
  if (!f.finishes) {
    return s + ": at " + costs +
           " the job never finishes, failing before it restarts, trains a step and saves";
  }
  s += "; a checkpoint every " + format_grouped(f.interval_steps) +
       (f.interval_steps == 1 ? " step" : " steps") + " (" + format_duration(f.interval_s) +
       ") at " + costs + ": " + format_duration(f.seconds) + ", " + format_fixed(100 * f.lost, 1) +
       " % lost to " + format_whole(f.failures) + " failures and the saves, " +
       format_whole(f.gpu_hours) + " GPU-hours";
  if (f.cost) s += ", cost " + format_whole(*f.cost);
  return s;
}

std::string time_to_train_text(const TimeToTrain& t) {
  std::string s = format_count(t.tokens) + " tokens in " + format_grouped(t.steps) +
                  (t.steps == 1 ? " step" : " steps") + " of " + format_count(t.tokens_per_step) +
                  (t.tokens_per_step == 1 ? " token: " : " tokens: ") + format_duration(t.seconds);
  if (t.p90_s > t.p10_s) {
    s += " (P10 " + format_duration(t.p10_s) + ", P90 " + format_duration(t.p90_s) + ")";
  }
  s += ", " + format_whole(t.gpu_hours) + " GPU-hours";
  if (t.cost) s += ", cost " + format_whole(*t.cost);
  return s + " (training steps only)";
}

std::string format_duration(double seconds) {
  constexpr double kMinute = 60, kHour = 3600, kDay = 86400;
  if (seconds >= 2 * kDay) return format_fixed(seconds / kDay, 1) + " days";
  if (seconds >= 2 * kHour) return format_fixed(seconds / kHour, 1) + " hours";
  if (seconds >= 2 * kMinute) return format_fixed(seconds / kMinute, 1) + " minutes";
  return format_fixed(seconds, 1) + " s";
}

namespace {

// x to three significant digits, trailing zeros dropped ("15", "1.5", "4.19").
std::string three_digits(double x) {
  const int decimals = x >= 100 ? 0 : x >= 10 ? 1 : 2;
  std::string s = format_fixed(x, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

}  // namespace

std::string format_count(double n) {
  struct Unit {
    double size;
    const char* suffix;
  };
  for (const Unit u : {Unit{1e12, "T"}, Unit{1e9, "B"}, Unit{1e6, "M"}, Unit{1e3, "K"}}) {
    // 999.5 thousand rounds to "1000K": say "1M" instead.
    if (n >= u.size * 0.9995) return three_digits(n / u.size) + u.suffix;
  }
  return three_digits(n);
}

std::string format_whole(double x) {
  return x < 1e15 ? format_grouped(std::llround(x)) : format_count(x);
}

}  // namespace trainsim
