#pragma once
// What LoRA fine-tuning (Plan::lora_rank) needs of the model and the plan, as NeMo's adapters on
// Megatron-Core's layers build them and as trainsim models them.
#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// Throws InputError naming the flag or JSON path at fault; target modules only with a rank.
void validate_lora(const Plan& plan, const Model& model, const PlanOrigin& origin);

}  // namespace trainsim
