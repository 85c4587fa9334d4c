#pragma once
// How long a run of a given number of tokens takes at the predicted step time: its steps, its
// wall-clock time with the step's band, and the GPU-hours it holds the cluster for.
#include <cstdint>
#include <optional>
#include <string>

namespace trainsim {

/// Tokens to train on, the price of a GPU-hour and the failures: what turns a step time into days,
/// GPU-hours and cost (a scenario's or a sweep file's "tokens", "price_per_gpu_hour", ..., or the
/// flags).
struct TrainingBudget {
  /// The most tokens a budget may ask for: steps stay exact whole numbers in 64 bits.
  static constexpr double kMaxTokens = 1e18;
  /// The highest price a GPU-hour may have.
  static constexpr double kMaxPrice = 1e9;
  /// The most hours, or seconds, a failure figure may give.
  static constexpr double kMaxHours = 1e9;
  static constexpr double kMaxSeconds = 1e9;
  std::optional<double> tokens;
  std::optional<double> price_per_gpu_hour;
  /// Failures (failures.hpp): the GPU-hours between interruptions of the job (its GPUs' hours over
  /// its unplanned stops), the seconds a checkpoint save stops training, and the seconds each
  /// failure costs beyond the work since the last checkpoint (finding it, relaunching, loading).
  std::optional<double> gpu_mtbf_hours;
  std::optional<double> checkpoint_s;
  std::optional<double> restart_s;
};

/// The run with failures, checkpointed at the interval that loses least (failures.hpp).
struct FailureCost {
  double gpu_mtbf_hours = 0;
  std::int64_t gpus = 0;            // the job's
  double checkpoint_s = 0;          // one save
  double restart_s = 0;             // one failure's cost beyond the lost work
  std::int64_t interval_steps = 0;  // steps between checkpoints
  double interval_s = 0;            // their training time
  bool finishes = true;             // false: the job fails sooner than it restarts and saves once
  double seconds = 0;               // wall-clock: training, saves, lost work and restarts
  double failures = 0;              // expected over that time
  double lost = 0;                  // share of the wall-clock not training: 1 - training / seconds
  double gpu_hours = 0;             // seconds x GPUs / 3600
  std::optional<double> cost;
  /// Between two failures of the job: gpu_mtbf_hours x 3600 / GPUs.
  double job_mtbf_s() const { return gpu_mtbf_hours * 3600.0 / static_cast<double>(gpus); }
  double days() const { return seconds / 86400.0; }
};

struct TimeToTrain {
  double tokens = 0;           // asked for
  double tokens_per_step = 0;  // gbs x seq-len
  std::int64_t steps = 0;      // the whole steps that cover the tokens
  double seconds = 0;          // steps x the predicted step time
  double p10_s = 0;            // steps x the band's P10 and P90 steps
  double p90_s = 0;
  double gpu_hours = 0;                 // seconds x GPUs / 3600
  std::optional<double> cost;           // gpu_hours x the price, where one is given
  std::optional<FailureCost> failures;  // where the budget gives a GPU MTBF
  double days() const { return seconds / 86400.0; }
};

/// The budget's tokens in steps of `tokens_per_step` at the step time `step_s` (band `p10_s` to
/// `p90_s`) on `gpus` GPUs, at its price; none without tokens. The time is the training steps'
/// alone (no evaluation or data stalls); with a GPU MTBF, `failures` adds the saves, the work
/// failures lose and the restarts.
std::optional<TimeToTrain> time_to_train(const TrainingBudget& budget, double tokens_per_step,
                                         double step_s, double p10_s, double p90_s,
                                         std::int64_t gpus);

/// The same run with failures, in one line: "one every 8.2 days (GPU MTBF 50,676 h over 256
/// GPUs); a checkpoint every 1,432 steps (108.4 minutes) at 30.0 s a save, 600.0 s a restart:
/// 202.6 days, 1.0 % lost to 25 failures and the saves, 1,244,939 GPU-hours".
std::string failures_text(const FailureCost& f);

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
