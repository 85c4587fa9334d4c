#include "sim/plan/lora_rules.hpp"

#include <string>

#include "sim/core/error.hpp"

namespace trainsim {

void validate_lora(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  if (!plan.lora()) {
    if (plan.lora_target_modules != kLoraAllModules) {
      fail_input(origin.of("lora_target_modules"), "chooses the linears LoRA adapts, so it needs " +
                                                       origin.name("lora_rank") +
                                                       " N (got 0: every weight trained)");
    }
    return;
  }
  const std::string not_modelled = "LoRA is modelled on dense models' decoder layers: ";
  if (model.moe.is_moe()) {
    fail_input(origin.of("lora_rank"),
               not_modelled + "adapters on a mixture-of-experts model's experts are not");
  }
  if (model.mla.is_mla()) {
    fail_input(origin.of("lora_rank"),
               not_modelled + "multi-head latent attention's projections are not linear_qkv");
  }
  if (model.mtp_layers > 0) {
    fail_input(origin.of("lora_rank"), not_modelled + "multi-token-prediction modules are not (" +
                                           origin.name("mtp_num_layers") + " 0)");
  }
  if (plan.zero >= 2) {
    fail_input(origin.of("zero"),
               "with LoRA is modelled up to 1 (Megatron-LM's distributed "
               "optimizer over the adapters), got " +
                   std::to_string(plan.zero));
  }
  if (plan.defer_embedding_wgrad_compute) {
    fail_input(origin.of("defer_embedding_wgrad_compute"),
               "has nothing to defer under LoRA, which freezes the LM head (no weight gradient)");
  }
  // Beside a column-parallel linear the adapter's first projection is Megatron's
  // ColumnParallelLinear of rank outputs, split over TP.
  const bool column = (plan.lora_target_modules & (kLoraQkv | kLoraFc1)) != 0;
  if (column && plan.lora_rank % plan.tp != 0) {
    fail_input(origin.of("lora_rank"),
               "must be divisible by " + origin.name("tp") + " " + std::to_string(plan.tp) +
                   " (an adapter beside linear_qkv or linear_fc1 splits its rank over TP), got " +
                   std::to_string(plan.lora_rank));
  }
}

}  // namespace trainsim
