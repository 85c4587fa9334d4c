#pragma once
// Buffers the software stack allocates at their first use and keeps for the rest of the run,
// beyond the platform's fitted allocated overhead: Transformer Engine's extra cuBLAS workspaces
// and Megatron-Core's global memory buffers. Part of a stage's allocated runtime.
#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

/// Transformer Engine's cuBLAS workspaces beyond the shared one, on a stage with experts
/// (`has_experts`) or without.
double extra_cublas_workspaces(const Platform& platform, const Plan& plan, bool has_experts);

/// Megatron-Core's global memory buffers kept on a stage that holds the LM head (`lm_head`) and
/// MoE layers (`moe_layers`) or not; 0 under other frameworks.
double megatron_global_buffers(const Model& model, const Plan& plan, bool lm_head, bool moe_layers);

}  // namespace trainsim
