#pragma once
// A long run on many GPUs stops whenever one of them fails: the job restarts from its last
// checkpoint, losing the work since and the restart itself, and every checkpoint costs a save.
// First-order model (Young 1974, Daly 2006): failures arrive at random, one per job MTBF M (the
// GPU MTBF over the GPUs), each losing half a checkpoint cycle (the interval T and its save C) and
// the restart R. The wall-clock W of S seconds of training is then
//   W = S (T + C) / T + (W / M) ((T + C) / 2 + R),  so  W = S (1 + C / T) / (b - T / (2M)),
// b = 1 - (R + C / 2) / M, least at T* = sqrt(C^2 + 2 M b C) - C (Young's sqrt(2 M C) for C << M).
#include <cstdint>
#include <optional>

#include "sim/report/time_to_train.hpp"

namespace trainsim {

/// W / S at checkpoint interval `interval_s` (seconds of training), nullopt where failures come
/// faster than the job can restart, save and train one interval: W is then unbounded.
std::optional<double> failure_slowdown(double interval_s, double job_mtbf_s, double checkpoint_s,
                                       double restart_s);

/// The interval T* that minimises failure_slowdown (0 where saves are free).
double best_checkpoint_interval(double job_mtbf_s, double checkpoint_s, double restart_s);

/// The run of `training_s` seconds in steps of `step_s` on `gpus` GPUs with the budget's failures,
/// checkpointed every whole number of steps nearest T* that loses least (one step at least);
/// nullopt without a GPU MTBF.
std::optional<FailureCost> failure_cost(const TrainingBudget& budget, double training_s,
                                        double step_s, std::int64_t gpus);

}  // namespace trainsim
