#pragma once
// Diagnostics of a plan in one call: detection (sim/check), then the search for each fix.
#include <optional>
#include <vector>

#include "sim/check/context.hpp"
#include "sim/check/diagnostic.hpp"

namespace trainsim {

/// What the frameworks would do wrong with the plan, in plain words, each with a fix that names a
/// concrete alternative plan and its simulated step time (analytic engine, symmetric replay where
/// the layout allows it: evaluate()). `baseline_step_s`: the plan's own step time from that same
/// simulation where the caller has run it already; else it is simulated here.
std::vector<Diagnostic> diagnose(const Model& model, const Platform& platform, const Plan& plan,
                                 const Partition& partition, const CostModel& costs,
                                 const CheckOptions& options = {},
                                 std::optional<double> baseline_step_s = std::nullopt);

}  // namespace trainsim
