#pragma once
// The search for a plan that fits in memory (the oom diagnostic's fix).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/search/plan_space.hpp"

namespace trainsim {

/// A candidate of the memory and deferral searches: `plan` on its own partition, or on trainsim's
/// balanced one where the plan as given has a defect (layers dropped, a stage with nothing to
/// train), since every candidate on its rule keeps the defect and none would count as a fix.
Candidate search_candidate(const PlanSpace& space, const Plan& plan);

/// What changes from the plan as given to `plan`, found by those searches: the partition first
/// where the search replaced it ("--partition balanced ...").
std::string search_changes(const PlanSpace& space, const Plan& plan);

/// `deferring` (a plan with --defer-embedding-wgrad-compute) with the largest
/// --wgrad-deferral-limit below its deferrals that fits, found by bisection: each deferral keeps
/// the same bytes to the flush, so fitting is monotone in the limit. None where no limit fits or
/// the rules refuse the deferral.
std::optional<Priced> largest_fitting_deferral(PlanSpace& space, const Plan& deferring);

/// The single memory-saving changes (candidates.hpp) that fit, fastest first; with
/// --defer-embedding-wgrad-compute, a lower limit that fits among them.
std::vector<Priced> fitting_single_changes(PlanSpace& space);

/// The fastest plan that fits on `gpus` GPUs among every layout (candidates.hpp), with the lowest
/// ZeRO stage that fits each; without recomputation if any fits, else with selective, else with
/// full recomputation. A layout where no ZeRO stage fits with full recomputation and its largest
/// EP (the least memory) is not tried with less or a smaller EP; the fitting ones are simulated
/// from the lowest step floor up (PlanSpace::fitting_step_floor) until the floors pass the fastest
/// step found.
std::optional<Priced> fastest_fitting_plan(PlanSpace& space, std::int64_t gpus);

/// How far the search for a cluster that fits goes: up to this many times the plan's GPUs.
inline constexpr std::int64_t kMoreGpus = 16;

/// The fix text: the single changes that fit (and the fastest plan on the same GPUs that fits
/// where it runs kMuchFaster than the fastest of them), else the fastest plan on the same GPUs
/// that fits, else the smallest cluster (doubling the GPUs) with one.
std::string memory_fix(PlanSpace& space);

}  // namespace trainsim
