#pragma once
#include <cstdint>

#include "sim/model/model.hpp"

namespace trainsim {

/// Parameter counts of a model, by block, without any padding or sharding.
struct ParamCount {
  std::int64_t word_embedding = 0;
  std::int64_t position_embedding = 0;
  std::int64_t layer_attention = 0;  // per decoder layer: QKV + output projection (+ biases)
  std::int64_t layer_mlp = 0;        // per decoder layer: dense MLP or all experts + router
  std::int64_t layer_norms = 0;      // per decoder layer: the two norms
  std::int64_t final_norm = 0;
  std::int64_t lm_head = 0;  // 0 when tied to the word embedding
  std::int64_t layer() const { return layer_attention + layer_mlp + layer_norms; }
  std::int64_t embedding() const { return word_embedding + position_embedding; }
  std::int64_t total(std::int64_t num_layers) const {
    return embedding() + num_layers * layer() + final_norm + lm_head;
  }
};

ParamCount count_params(const Model& m);
/// Total parameters, as a framework's sum(p.numel()) reports them.
std::int64_t total_params(const Model& m);
/// Norm parameters per normalised vector of `width` (weight, plus bias for LayerNorm).
std::int64_t norm_params(const Model& m, std::int64_t width);
/// Parameters of one MLP (one expert for MoE) including biases.
std::int64_t mlp_params(const Model& m, std::int64_t ffn_hidden_size);

}  // namespace trainsim
