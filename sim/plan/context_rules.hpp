#pragma once
// Megatron-Core's and Transformer Engine's rules for the sequence: how context parallelism cuts
// it, which attention runs under it and which exchange the heads allow, and what packed
// documents need.
#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// Throws InputError naming the flag or JSON path at fault; nothing to check at cp 1.
void validate_context_parallelism(const Plan& plan, const Model& model, const PlanOrigin& origin);
/// Packed documents (Plan::packed_document_tokens): no longer than the sequence, on Transformer
/// Engine's fused attention, without context parallelism (not modelled).
void validate_packing(const Plan& plan, const PlanOrigin& origin);

}  // namespace trainsim
