#pragma once
// What Transformer Engine's FP8 scaling recipes (sim/plan/plan.hpp, Fp8Recipe) add to a block's
// pass beyond the casts every recipe runs (sim/cost/kernel_specs.cpp, linear). Current scaling
// (tensorwise) reads each tensor it casts once more for its amax, just before the cast; where
// sequence parallelism gathers a column-parallel linear's input (forward) or a row-parallel
// linear's output gradient (backward), that amax is all-reduced over TP first, one FP32 a
// tensor, so that every rank casts its shard at the same scale (Transformer Engine's Linear and
// LayerNormLinear quantizers `with_amax_reduction` on the TP group). Delayed scaling's amax
// reduction over the stage, once a pass, is fp8_amax.hpp's; blockwise scaling adds nothing here
// (its scales come out of the cast itself).
#include <cstdint>

#include "sim/cost/layer_ops.hpp"

namespace trainsim {

/// The calls of the TP all-gathers in a block's forward pass: with sequence parallelism, its
/// column-parallel linears whose inputs are gathered (each paired with a row-parallel one whose
/// output gradient the backward gathers).
std::int64_t tp_gather_calls(const BlockPass& forward);

/// Adds current scaling's work to `pass`: an amax kernel before each FP8 cast, and with sequence
/// parallelism over TP one amax all-reduce per gathered tensor, `gathered` of them.
void add_current_scaling(BlockPass& pass, const LayerShape& s, std::int64_t gathered);

}  // namespace trainsim
