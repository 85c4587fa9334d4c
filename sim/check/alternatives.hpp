#pragma once
// Pricing the alternatives that diagnostics propose: each is simulated with the analytic engine
// so a fix can say what it would cost or gain.
#include <optional>
#include <string>

#include "sim/evaluate/evaluate.hpp"

namespace trainsim {

struct Priced {
  Plan plan;
  Partition partition;
  double step_time_s = 0;
  double tokens_per_s = 0;
};

/// Simulates `plan` (its own partition rule); nullopt when the plan is not buildable.
std::optional<Priced> price(const Model& model, const Platform& platform, const Plan& plan);
/// Simulates `plan` with an explicit partition.
Priced price(const Model& model, const Platform& platform, const Plan& plan, Partition partition);

/// Whether the partition has a defect that stops a framework (no-parameter, empty stage, dropped
/// layers).
bool partition_is_defective(const Partition& partition);

/// The largest pp below the plan's whose partition (same rule, same GPUs: dp grows as pp shrinks)
/// has no defect.
std::optional<Priced> smaller_pp_without_defect(const Model& model, const Platform& platform,
                                                const Plan& plan);

/// "step 1.234 s (-12.3 % vs 1.407 s now)".
std::string step_comparison(double alternative, double now);

}  // namespace trainsim
