#include "sim/cost/step_flops.hpp"

#include "sim/model/flops.hpp"

namespace trainsim {

double step_model_flops(const Model& model, const Plan& plan) {
  const double all =
      model_flops_per_sample(model, plan.seq_len) * static_cast<double>(plan.sequences_per_step());
  return plan.lora() ? all * 2.0 / 3.0 : all;
}

}  // namespace trainsim
