#include "sim/plan/deferral_rules.hpp"

#include <string>

#include "sim/core/error.hpp"

namespace trainsim {

void validate_wgrad_deferral(const Plan& plan, const PlanOrigin& origin) {
  const std::string field = "defer_embedding_wgrad_compute";
  if (!plan.defer_embedding_wgrad_compute) {
    if (plan.wgrad_deferral_limit != 0) {
      fail_input(origin.of("wgrad_deferral_limit"), "needs " + origin.name(field));
    }
    return;
  }
  if (plan.effective_framework() != Framework::kMegatron) {
    fail_input(origin.of(field), std::string("is Megatron-LM's; ") +
                                     to_string(plan.effective_framework()) + " does not defer it");
  }
  // Megatron-LM: "Cannot defer embedding wgrad compute when pipeline model parallel is not used".
  if (plan.pp < 2) {
    fail_input(origin.of(field), "needs " + origin.name("pp") +
                                     " 2 or more: the weight gradients run in the pipeline "
                                     "flush, which one stage does not have (Megatron-LM's rule)");
  }
  if (plan.schedule != ScheduleKind::k1F1B && plan.schedule != ScheduleKind::kInterleaved) {
    fail_input(origin.of(field), std::string("applies to Megatron-LM's 1f1b and interleaved "
                                             "schedules, not ") +
                                     to_string(plan.schedule));
  }
}

void validate_wgrad_deferral(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  validate_wgrad_deferral(plan, origin);
  if (plan.defer_embedding_wgrad_compute && model.mtp_layers > 0) {
    fail_input(origin.of("defer_embedding_wgrad_compute"),
               "with multi-token prediction is not modelled (Megatron-LM also defers each "
               "module's LM-head run, counting every run against the limit); use " +
                   origin.name("mtp_num_layers") + " 0 or leave the deferral out");
  }
}

}  // namespace trainsim
