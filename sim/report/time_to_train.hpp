#pragma once
// How long a run of a given number of tokens takes at the predicted step time: its steps, its
// wall-clock time with the step's band, and the GPU-hours it holds the cluster for.
#include <cstdint>
#include <optional>
#include <string>

namespace trainsim {

/// Tokens to train on and the price of a GPU-hour: what turns a step time into days, GPU-hours and
/// cost (a scenario's or a sweep file's "tokens" and "price_per_gpu_hour", or the flags).
struct TrainingBudget {
  /// The most tokens a budget may ask for: steps stay exact whole numbers in 64 bits.
  static constexpr double kMaxTokens = 1e18;
  /// The highest price a GPU-hour may have.
  static constexpr double kMaxPrice = 1e9;
  std::optional<double> tokens;
  std::optional<double> price_per_gpu_hour;
};

struct TimeToTrain {
  double tokens = 0;           // asked for
  double tokens_per_step = 0;  // gbs x seq-len
  std::int64_t steps = 0;      // the whole steps that cover the tokens
  double seconds = 0;          // steps x the predicted step time
  double p10_s = 0;            // steps x the band's P10 and P90 steps
  double p90_s = 0;
  double gpu_hours = 0;        // seconds x GPUs / 3600
  std::optional<double> cost;  // gpu_hours x the price, where one is given
  double days() const { return seconds / 86400.0; }
};

/// The budget's tokens in steps of `tokens_per_step` at the step time `step_s` (band `p10_s` to
/// `p90_s`) on `gpus` GPUs, at its price; none without tokens. The time is the training steps'
/// alone: no evaluation, checkpoint saves, restarts or data stalls.
std::optional<TimeToTrain> time_to_train(const TrainingBudget& budget, double tokens_per_step,
                                         double step_s, double p10_s, double p90_s,
                                         std::int64_t gpus);

/// The run in one line: "15T tokens in 3,576,279 steps of 4.19M tokens: 42.3 days (P10 41.1 days,
/// P90 43.0 days), 1,040,221 GPU-hours (training steps only)".
std::string time_to_train_text(const TimeToTrain& t);

/// A long span as a planner reads it: "42.3 days" from two days up, else "31.4 hours", "12.0
/// minutes" or "45.0 s".
std::string format_duration(double seconds);

/// A count in the units of a token budget: "15T", "1.5T", "300B", "4.19M", "512".
std::string format_count(double n);

/// A whole count of hours or money, its thousands grouped ("1,232,499"), or from a quadrillion on
/// as format_count gives it.
std::string format_whole(double x);

}  // namespace trainsim
