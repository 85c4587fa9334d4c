#include "sim/validate/step_time.hpp"

#include <utility>

#include "sim/core/error.hpp"
#include "sim/evaluate/evaluate.hpp"

namespace trainsim {

ValidationSet step_time_set(const std::filesystem::path& reference, const Platform& platform,
                            std::string metric) {
  ValidationSet set;
  set.quantity = Quantity::kStepTime;
  set.reference = reference.filename().string();
  set.metric = std::move(metric);
  set.platform = platform.name;
  set.band = platform.calibration.band;
  return set;
}

void predict_step_time(ValidationRow& row, const std::function<Model()>& model, const Plan& plan,
                       const Platform& platform) {
  try {
    const Model m = model();
    validate_plan(plan, m, platform, {});
    const Evaluation e = evaluate(m, platform, plan, build_partition(m, platform, plan));
    row.predicted = e.sim.step_time_s;
    row.kernel_spread = kernel_spread(e.costs).width();
  } catch (const InputError& e) {
    row.skipped = std::string("not expressible: ") + e.what();
  }
}

}  // namespace trainsim
