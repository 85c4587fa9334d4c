#pragma once
#include <cstdint>

#include "sim/model/model.hpp"

namespace trainsim {

/// Model FLOPs of one training sample of `seq_len` tokens (forward and backward, no
/// recomputation), as Megatron-LM's num_floating_point_operations and NeMo count them: every
/// weight GEMM 6 FLOPs per parameter per token, attention scores and values with the full
/// (unmasked) s^2 count, and the logit layer; a mixture-of-experts layer counts the top-k
/// experts and the shared one, MLA its low-rank projections, each multi-token-prediction module
/// a layer, its projection and norms, and the logits once more. Used for model TFLOP/s and MFU.
/// `causal` counts half the s^2 terms, as NeMo's formulas for its MoE recipes (Grok-1,
/// Llama 4) do.
double model_flops_per_sample(const Model& m, std::int64_t seq_len, bool causal = false);

}  // namespace trainsim
