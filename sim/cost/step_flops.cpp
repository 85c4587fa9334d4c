#include "sim/cost/step_flops.hpp"

#include "sim/cost/roofline.hpp"
#include "sim/model/flops.hpp"

namespace trainsim {

double step_model_flops(const Model& model, const Plan& plan) {
  const double all =
      model_flops_per_sample(model, plan.seq_len) * static_cast<double>(plan.sequences_per_step());
  return plan.lora() ? all * 2.0 / 3.0 : all;
}

StepRates step_rates(const Model& model, const Platform& platform, const Plan& plan, double step) {
  StepRates r;
  r.tokens_per_s = static_cast<double>(plan.tokens_per_step()) / step;
  r.model_flops_per_gpu =
      step_model_flops(model, plan) / step / static_cast<double>(plan.world_size());
  r.mfu = r.model_flops_per_gpu / peak_flops(platform, plan.precision, KernelKind::kGemm);
  return r;
}

}  // namespace trainsim
