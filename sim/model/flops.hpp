#pragma once
#include <cstdint>

#include "sim/model/model.hpp"

namespace trainsim {

/// Model FLOPs of one training sample of `seq_len` tokens (forward and backward, no
/// recomputation), as Megatron-LM's num_floating_point_operations and NeMo count them: every
/// weight GEMM 6 FLOPs per parameter per token, attention scores and values with the full
/// (unmasked) s^2 count, and the logit layer. Used for model TFLOP/s and MFU.
double model_flops_per_sample(const Model& m, std::int64_t seq_len);

}  // namespace trainsim
