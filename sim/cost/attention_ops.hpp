#pragma once
// The attention's input projections of a decoder layer on one TP rank: Q, K and V in one
// column-parallel GEMM, or DeepSeek's multi-head latent attention (MLA): the query and key-value
// down-projections whole on every rank (Megatron-Core's duplicated linears), their norms, and the
// column-parallel up-projections.
#include <string>
#include <vector>

#include "sim/cost/layer_ops.hpp"

namespace trainsim {

/// The projections' kernels of the forward pass (with the rotary embedding).
void attention_in_forward(std::vector<KernelSpec>& k, const LayerShape& s);
/// Their backward, in reverse order.
void attention_in_backward(std::vector<KernelSpec>& k, const LayerShape& s);
/// The input projections' GEMMs by name, in forward order: qkv_proj, or MLA's q_down and q_up
/// (or q_proj), kv_down and kv_up.
std::vector<std::string> attention_in_gemms(const LayerShape& s);
/// The GEMM a sequence-parallel all-gather of the attention's input feeds (the first of them).
std::string attention_in_gemm(const LayerShape& s);

}  // namespace trainsim
