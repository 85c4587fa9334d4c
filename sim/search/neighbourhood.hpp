#pragma once
// The plan against its neighbours: the plans one step away on the same GPUs (candidates.hpp's
// neighbouring_plans), each priced where it fits in memory. A defect the detectors cannot see,
// because nothing is wrong with any one stage: the plan's shape itself (a pipeline too deep for
// its batch, a TP too wide for its model) wastes the GPUs.
#include <optional>

#include "sim/check/diagnostic.hpp"
#include "sim/search/plan_space.hpp"

namespace trainsim {

/// A plan nearby must be at least this many times faster to be reported.
inline constexpr double kMuchFaster = 1.25;

/// `faster-plan-nearby` (warning) when a neighbour that fits runs the step kMuchFaster times
/// faster or more: what dominates this plan's step (pipeline bubble, exposed communication,
/// recomputation) and the faster neighbours ranked by gain; nullopt otherwise. diagnose() asks
/// only for a plan that fits: an oom fix prices plans that do.
std::optional<Diagnostic> faster_plan_nearby(PlanSpace& space);

}  // namespace trainsim
