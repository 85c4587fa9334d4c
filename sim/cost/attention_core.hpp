#pragma once
// The attention core of a decoder layer's pass on one rank, between its projections
// (attention_ops.hpp) and its output projection: one fused flash kernel (its causal blocks under
// context parallelism's ring, a local window's blocks), or Megatron-LM's unfused core (the full
// score matrix as batched GEMMs around a softmax).
#include <vector>

#include "sim/cost/layer_ops.hpp"

namespace trainsim {

/// The core's kernels of the forward (`backward` false) or the backward pass.
void attention_core(std::vector<KernelSpec>& k, const LayerShape& s, bool backward);

}  // namespace trainsim
