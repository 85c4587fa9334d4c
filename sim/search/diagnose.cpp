#include "sim/search/diagnose.hpp"

#include <algorithm>

#include "sim/check/detect.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/search/fixes.hpp"
#include "sim/search/neighbourhood.hpp"
#include "sim/search/plan_space.hpp"

namespace trainsim {

std::vector<Diagnostic> diagnose(const Model& model, const Platform& platform, const Plan& plan,
                                 const Partition& partition, const CostModel& costs,
                                 const CheckOptions& options,
                                 std::optional<double> baseline_step_s) {
  const std::vector<double> times = stage_times(platform, plan, costs);
  const CheckContext context{model, platform, plan, partition, costs, times, options};
  PlanSpace space(model, platform, plan, partition, baseline_step_s);
  std::vector<Diagnostic> out = write_fixes(space, detect(context));
  // A plan that does not fit has its fix already: plans that do, priced.
  const bool fits =
      std::none_of(out.begin(), out.end(), [](const Diagnostic& d) { return d.id == "oom"; });
  if (fits) {
    if (auto nearby = faster_plan_nearby(space)) out.push_back(std::move(*nearby));
  }
  return out;
}

}  // namespace trainsim
