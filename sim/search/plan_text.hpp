#pragma once
// How a fix names an alternative plan and what it costs.
#include <string>

#include "sim/plan/plan.hpp"

namespace trainsim {

/// The flags that turn plan `from` into `to`, for the fields fixes change: "--tp 8 --dp 1 --sp";
/// with "--gbs N" where `from` left its batch to the default (mbs x dp) and `to` changes mbs x dp,
/// since the search runs every candidate with the plan's batch.
std::string plan_changes(const Plan& from, const Plan& to);

/// The same for `to` priced on trainsim's balanced partition: "--partition balanced" first, the
/// framework its own partition rule implied (nanotron, DeepSpeed), then the rest (Megatron-LM's
/// uneven-stage options dropped among them).
std::string balanced_plan_changes(const Plan& from, const Plan& to);

/// "step 1.234 s (-12.3 % vs 1.407 s now)".
std::string step_comparison(double alternative, double now);

}  // namespace trainsim
