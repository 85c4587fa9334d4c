#include "sim/search/memory_fix.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>

#include "sim/check/detect.hpp"
#include "sim/core/format.hpp"
#include "sim/search/candidates.hpp"
#include "sim/search/neighbourhood.hpp"
#include "sim/search/plan_text.hpp"

namespace trainsim {

namespace {

bool searched_balanced(const PlanSpace& space) {
  return partition_defect(space.partition()).has_value();
}

// "--zero 3 (peak 61.20 GiB): step ..." against the plan as given.
std::string fit_text(PlanSpace& space, const Priced& fit) {
  return search_changes(space, fit.plan) + " (peak " + format_bytes(*fit.peak_bytes) +
         "): " + step_comparison(fit.step_time_s, space.baseline());
}

}  // namespace

Candidate search_candidate(const PlanSpace& space, const Plan& plan) {
  return {plan, searched_balanced(space)};
}

std::string search_changes(const PlanSpace& space, const Plan& plan) {
  return searched_balanced(space) ? balanced_plan_changes(space.plan(), plan)
                                  : plan_changes(space.plan(), plan);
}

std::optional<Priced> largest_fitting_deferral(PlanSpace& space, const Plan& deferring) {
  std::optional<Priced> best;
  std::int64_t lo = 1, hi = deferring.deferred_lm_head_wgrads() - 1;
  while (lo <= hi) {
    const std::int64_t limit = lo + (hi - lo) / 2;
    Plan p = deferring;
    p.wgrad_deferral_limit = limit;
    const Outcome o = space.price(search_candidate(space, p), Need::kFits);
    if (o && o->plan.defer_embedding_wgrad_compute) {
      best = *o;
      lo = limit + 1;
    } else {
      hi = limit - 1;
    }
  }
  return best;
}

std::vector<Priced> fitting_single_changes(PlanSpace& space) {
  std::vector<Priced> fits;
  for (const Plan& p :
       memory_saving_changes(space.plan(), space.model(), space.platform().node.gpus_per_node)) {
    if (auto o = space.price(search_candidate(space, p), Need::kFits)) fits.push_back(*o);
  }
  if (auto fewer = largest_fitting_deferral(space, space.plan())) fits.push_back(*fewer);
  // Fastest first: the change a planner would make.
  std::stable_sort(fits.begin(), fits.end(),
                   [](const Priced& a, const Priced& b) { return a.step_time_s < b.step_time_s; });
  return fits;
}

namespace {

// A fitting candidate with the floor under its step.
using Floored = std::pair<double, Candidate>;

// The ladder's lowest ZeRO stage that fits (a higher one saves memory the layout does not need).
std::optional<Floored> lowest_fitting(PlanSpace& space, const ZeroLadder& ladder) {
  for (const Plan& p : ladder) {
    const Candidate c = search_candidate(space, p);
    if (const auto floor = space.fitting_step_floor(c)) return Floored{*floor, c};
  }
  return std::nullopt;
}

// The fastest of the candidates, simulated from the lowest floor up until the floors pass the
// fastest step found: no candidate after that can be faster.
std::optional<Priced> fastest_of(PlanSpace& space, std::vector<Floored> fitting) {
  std::stable_sort(fitting.begin(), fitting.end(),
                   [](const Floored& a, const Floored& b) { return a.first < b.first; });
  std::optional<Priced> fastest;
  for (const auto& [floor, c] : fitting) {
    if (fastest && floor >= fastest->step_time_s) break;
    const Outcome o = space.price(c, Need::kFits);
    if (o && (!fastest || o->step_time_s < fastest->step_time_s)) fastest = *o;
  }
  return fastest;
}

// A layout's key up to its EP: the ladders of one layout that differ in EP alone share it.
using LayoutKey = std::array<std::int64_t, 4>;
LayoutKey layout_key(const ZeroLadder& ladder) {
  const Plan& p = ladder.front();
  return {p.tp, p.cp, p.pp, p.dp};
}

}  // namespace

std::optional<Priced> fastest_fitting_plan(PlanSpace& space, std::int64_t gpus) {
  const std::int64_t node = space.platform().node.gpus_per_node;
  const auto layouts = [&](Recompute r) {
    return layouts_on(space.plan(), gpus, node, space.model(), r);
  };
  // Full recomputation keeps the fewest activations, and a layout's largest EP the fewest expert
  // weights: a layout where no ZeRO stage fits with both fits with no other recomputation or
  // smaller EP, and is not tried again (nor is a cluster where none fits).
  const std::vector<ZeroLadder> frugal = layouts(Recompute::kFull);
  std::map<LayoutKey, const ZeroLadder*> largest_ep;
  for (const ZeroLadder& ladder : frugal) {
    const ZeroLadder*& largest = largest_ep[layout_key(ladder)];
    if (!largest || ladder.front().ep > largest->front().ep) largest = &ladder;
  }
  std::map<LayoutKey, bool> can_fit;
  for (const auto& [key, ladder] : largest_ep) {
    can_fit[key] = lowest_fitting(space, *ladder).has_value();
  }
  if (std::none_of(can_fit.begin(), can_fit.end(), [](const auto& k) { return k.second; })) {
    return std::nullopt;
  }
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    std::vector<Floored> fitting;
    for (const ZeroLadder& ladder : r == Recompute::kFull ? frugal : layouts(r)) {
      if (!can_fit.at(layout_key(ladder))) continue;
      if (auto f = lowest_fitting(space, ladder)) fitting.push_back(std::move(*f));
    }
    if (auto fastest = fastest_of(space, std::move(fitting))) return fastest;
  }
  return std::nullopt;
}

std::string memory_fix(PlanSpace& space) {
  const std::vector<Priced> fits = fitting_single_changes(space);
  const std::int64_t gpus = space.plan().world_size();
  const std::string on = format_grouped(gpus) + (gpus == 1 ? " GPU" : " GPUs");
  if (!fits.empty()) {
    std::string fix;
    for (const auto& f : fits) fix += (fix.empty() ? "" : "; or ") + fit_text(space, f);
    // A single change is the smallest edit, not the best plan: where a layout further away (more
    // EP, CP, another TP or PP) runs much faster, it is named too.
    const auto f = fastest_fitting_plan(space, gpus);
    if (f && f->step_time_s * kMuchFaster <= fits.front().step_time_s) {
      fix += "; or " + search_changes(space, f->plan) + " (the fastest plan on the same " + on +
             " that fits, peak " + format_bytes(*f->peak_bytes) +
             "): " + step_comparison(f->step_time_s, space.baseline());
    }
    return fix;
  }
  if (auto f = fastest_fitting_plan(space, gpus)) {
    return "no single change fits; the fastest plan on the same " + on +
           " that does: " + fit_text(space, *f);
  }
  for (std::int64_t more = 2 * gpus; more <= kMoreGpus * gpus; more *= 2) {
    auto f = fastest_fitting_plan(space, more);
    if (!f) continue;
    return "no plan on " + on + " fits; the smallest cluster that does has " +
           format_grouped(more) + " GPUs, and its fastest plan is " +
           search_changes(space, f->plan) + " (peak " + format_bytes(*f->peak_bytes) + "): step " +
           format_seconds(f->step_time_s) + ", " + format_grouped(std::llround(f->tokens_per_s)) +
           " tokens/s";
  }
  return "no plan of up to " + format_grouped(kMoreGpus * gpus) +
         " GPUs fits at this batch and sequence length";
}

}  // namespace trainsim
