#pragma once
#include <cstdint>

#include "sim/model/model.hpp"

namespace trainsim {

/// Parameter counts of a model, by block, without any padding or sharding. A mixture-of-experts
/// model has two kinds of decoder layer: MoE layers (routed experts, router, shared expert) and
/// dense ones (MoeSpec's leading and interleaved dense layers); attention and norms are the same
/// in both.
struct ParamCount {
  std::int64_t word_embedding = 0;
  std::int64_t position_embedding = 0;
  std::int64_t layer_attention = 0;  // per decoder layer: projections, biases, q/k norms, sinks
  std::int64_t layer_mlp = 0;        // per MoE layer: its experts (a dense model: the dense MLP)
  std::int64_t dense_layer_mlp = 0;  // per dense layer: the dense MLP (a dense model's every layer)
  std::int64_t layer_norms = 0;      // per decoder layer: the two norms (four, sandwiched)
  std::int64_t final_norm = 0;
  std::int64_t lm_head = 0;     // 0 when tied to the word embedding
  std::int64_t moe_layers = 0;  // MoE layers of the model (0 for a dense model)
  /// One decoder layer: an MoE layer (or any layer of a dense model), or a dense one.
  std::int64_t layer(bool moe = true) const {
    return layer_attention + (moe ? layer_mlp : dense_layer_mlp) + layer_norms;
  }
  std::int64_t embedding() const { return word_embedding + position_embedding; }
  std::int64_t total(std::int64_t num_layers) const {
    return embedding() + moe_layers * layer(true) + (num_layers - moe_layers) * layer(false) +
           final_norm + lm_head;
  }
};

ParamCount count_params(const Model& m);
/// Total parameters, as a framework's sum(p.numel()) reports them.
std::int64_t total_params(const Model& m);
/// Parameters one token passes through, as DeepSeek-V3's and GPT-OSS's model cards count them:
/// everything but the routed experts a token is not sent to (it goes to top-k of them) and the
/// input embeddings (a row is read, nothing multiplied; a tied matrix counts as the output
/// layer).
std::int64_t active_params(const Model& m);
/// Whether the multi-token-prediction modules' decoder layer is an MoE layer: it is built like
/// the model's last decoder layer (Megatron-Core's MTP spec; DeepSeek-V3's layer 61).
bool mtp_layer_is_moe(const Model& m);
/// Parameters of one multi-token-prediction module as Megatron-Core builds it: the embedding
/// norm, the hidden-state norm, the projection of 2 x hidden to hidden, its decoder layer and its
/// final norm; the embedding and the LM head are the main model's, shared.
std::int64_t mtp_module_params(const Model& m);
/// Parameters of decoder layer `layer` (from 0).
std::int64_t layer_params(const Model& m, std::int64_t layer);
/// Norm parameters per normalised vector of `width` (weight, plus bias for LayerNorm).
std::int64_t norm_params(const Model& m, std::int64_t width);
/// Parameters of one MLP (one expert for MoE) including biases.
std::int64_t mlp_params(const Model& m, std::int64_t ffn_hidden_size);
/// An MoE layer's gates, replicated over TP: the router (a weight per expert and model
/// dimension, and its bias if any) and the shared expert's gate if any (hidden parameters).
std::int64_t gating_params(const Model& m);

}  // namespace trainsim
