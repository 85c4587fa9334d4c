#pragma once
// FP8 delayed scaling's amax reductions, as Transformer Engine runs them under Megatron-Core: at
// the end of each forward of a model chunk, and at the end of its backward, one all-reduce (MAX)
// of the amaxes its FP8 GEMMs recorded, over the tensor-and-data-parallel group with context
// parallelism (every rank of the pipeline stage), issued on the compute stream and waited for
// there. Each FP8 GEMM records three amaxes in the forward (input, weight, output) and two in the
// backward (output and input gradients), one FP32 each. A recompute forward reduces none.
#include <cstdint>

#include "sim/cost/stage_cost.hpp"

namespace trainsim {

/// An amax: one FP32, whichever recipe reduces it (current scaling's too, fp8_recipe.hpp).
inline constexpr double kAmaxBytes = 4;

/// FP8 GEMM calls (a grouped GEMM's every group) in a pass: the GEMM modules whose amaxes it
/// records.
std::int64_t fp8_gemm_calls(const PassCost& pass);

/// Adds a stage's amax reductions to its forward and backward passes (whole and input-gradient);
/// nothing when the stage runs no FP8 GEMM.
void add_amax_reductions(StageCost& stage);

}  // namespace trainsim
