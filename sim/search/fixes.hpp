#pragma once
// From fix requests to fix text: each request's alternatives priced in the plan space.
#include <string>
#include <vector>

#include "sim/check/fix_request.hpp"
#include "sim/search/plan_space.hpp"

namespace trainsim {

/// The fix text of one request; empty where no alternative it names could be priced.
std::string fix_text(PlanSpace& space, const FixRequest& request);

/// The findings' diagnostics with their fix text. A stage-imbalance finding (BalancedPartition)
/// gets what the imbalance costs appended to its message, or is withdrawn where the balanced
/// partition is no faster.
std::vector<Diagnostic> write_fixes(PlanSpace& space, std::vector<Finding> findings);

}  // namespace trainsim
