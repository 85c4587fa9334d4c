#include "sim/search/neighbourhood.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "sim/core/format.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/search/candidates.hpp"
#include "sim/search/plan_text.hpp"

namespace trainsim {

namespace {

// The faster neighbours listed in a fix.
constexpr std::size_t kListed = 3;

struct Share {
  const char* what;
  double fraction;
};

// Where this plan's step goes, on the analytic engine: idle (the pipeline bubble and waits),
// exposed communication, recomputation; the largest first.
std::array<Share, 3> step_shares(const PlanSpace& space) {
  const Evaluation e = evaluate(space.model(), space.platform(), space.plan(), space.partition());
  const double step = e.sim.step_time_s;
  double idle = 0, comm = 0;
  for (const RankStats& r : e.sim.ranks) {
    idle += std::max(0.0, step - r.compute_s - r.comm_total());  // not below 0 by rounding
    comm += r.comm_total();
  }
  const auto ranks = static_cast<double>(e.sim.ranks.size());
  double recompute = 0;  // per GPU, mean over stages
  const auto m = static_cast<double>(space.plan().num_microbatches());
  for (const StageCost& s : e.costs.stages) recompute += s.recompute.seconds * m;
  recompute /= static_cast<double>(space.plan().pp);
  std::array<Share, 3> shares = {Share{"pipeline bubble and waits", idle / ranks / step},
                                 Share{"exposed communication", comm / ranks / step},
                                 Share{"recomputation", recompute / step}};
  std::sort(shares.begin(), shares.end(),
            [](const Share& a, const Share& b) { return a.fraction > b.fraction; });
  return shares;
}

std::string percent(double fraction) {
  return format_fixed(100.0 * fraction, 0) + " %";
}

}  // namespace

std::optional<Diagnostic> faster_plan_nearby(PlanSpace& space) {
  const double now = space.baseline();
  std::vector<std::pair<double, Plan>> faster;
  std::int64_t too_big = 0;  // faster neighbours refused by memory are not known to be faster
  for (const Plan& p :
       neighbouring_plans(space.plan(), space.model(), space.platform().node.gpus_per_node)) {
    const Outcome o = space.price({p}, Need::kFits);
    if (!o) {
      if (o.reason().starts_with("does not fit")) ++too_big;
      continue;
    }
    if (o->step_time_s * kMuchFaster <= now) faster.emplace_back(o->step_time_s, p);
  }
  if (faster.empty()) return std::nullopt;
  std::sort(faster.begin(), faster.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto shares = step_shares(space);
  Diagnostic d;
  d.id = "faster-plan-nearby";
  d.severity = Severity::kWarning;
  const Plan& best = faster.front().second;
  d.message = plan_changes(space.plan(), best) + " on the same " +
              format_grouped(space.plan().world_size()) + " GPUs runs the step " +
              format_fixed(now / faster.front().first, 1) + "x faster: this plan's step is " +
              percent(shares[0].fraction) + " " + shares[0].what + ", " +
              percent(shares[1].fraction) + " " + shares[1].what + " and " +
              percent(shares[2].fraction) + " " + shares[2].what + " (per GPU, mean)";
  if (too_big > 0) {
    d.message += "; " + std::to_string(too_big) + " other neighbouring plans do not fit in memory";
  }
  for (std::size_t i = 0; i < faster.size() && i < kListed; ++i) {
    d.fix += (i == 0 ? "" : "; ") + plan_changes(space.plan(), faster[i].second) + ": " +
             step_comparison(faster[i].first, now);
  }
  return d;
}

}  // namespace trainsim
