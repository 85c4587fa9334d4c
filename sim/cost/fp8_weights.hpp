#pragma once
// The FP8 weights of a step: Transformer Engine quantises each GEMM weight once a step, on the
// chunk's first micro-batch (Megatron-Core sets `is_first_microbatch` then and the layers keep
// the FP8 copy for the step's other micro-batches), in both layouts since Hopper's FP8 GEMMs
// take only the TN layout: a BF16 weight is cast and transposed; an FP8 primary weight
// (--fp8-param-gather) is already FP8 in its own layout after the optimizer step and its
// all-gather, and only transposed (Transformer Engine's post-all-gather processing).
#include "sim/cost/layer_ops.hpp"

namespace trainsim {

/// One kernel per FP8 GEMM of a block's `forward` pass, each launch of it its own weight (k x n
/// of each group, rows = the weight's outputs): fp8_cast_transpose from BF16, or fp8_transpose
/// with `fp8_weights`. Empty for a block without FP8 GEMMs (BF16 plans, the LM head).
BlockPass fp8_weight_casts(const BlockPass& forward, bool fp8_weights);

}  // namespace trainsim
