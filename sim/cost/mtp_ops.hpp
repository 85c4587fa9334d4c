#pragma once
// A multi-token-prediction module's own kernels and collectives on one GPU, as Megatron-Core's
// MultiTokenPredictionLayer runs them; its decoder layer is priced as a decoder block, its
// logits and loss by the LM head and loss blocks (sim/cost/stage_cost.hpp, block_runs).
#include "sim/cost/layer_ops.hpp"

namespace trainsim {

/// Appends one module's forward (or backward) kernels and collectives to a pass.
void mtp_module(const LayerShape& s, BlockPass& p, bool backward);

}  // namespace trainsim
