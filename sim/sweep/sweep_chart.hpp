#pragma once
// A sweep's plans as time against cost, for a planner choosing between them: each plan that
// finishes at the days it takes (with failures where the sweep has a GPU MTBF; a log scale, since
// GPU counts double) and the GPU-hours it spends, coloured by GPU count, the deadline as a line and
// the cheapest plan within it ringed. SVG, self-contained, each point's plan in its tooltip.
#include <optional>
#include <string>
#include <vector>

#include "sim/sweep/sweep_summary.hpp"

namespace trainsim {

/// The chart, or nullopt where no plan has days (the sweep has no token budget, or one that
/// rounds to 0 days) or none finishes.
std::optional<std::string> sweep_svg(const std::vector<SweepEntry>& entries,
                                     std::optional<double> deadline_days, const std::string& title);

}  // namespace trainsim
