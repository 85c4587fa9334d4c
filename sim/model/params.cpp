#include "sim/model/params.hpp"

namespace trainsim {

std::int64_t norm_params(const Model& m, std::int64_t width) {
  return m.norm == NormKind::kLayerNorm ? 2 * width : width;
}

std::int64_t mlp_params(const Model& m, std::int64_t ffn) {
  const std::int64_t h = m.hidden_size;
  std::int64_t up = (is_gated(m.ffn_kind) ? 2 : 1) * h * ffn;
  std::int64_t down = ffn * h;
  std::int64_t bias = m.mlp_bias ? (is_gated(m.ffn_kind) ? 2 : 1) * ffn + h : 0;
  return up + down + bias;
}

ParamCount count_params(const Model& m) {
  const std::int64_t h = m.hidden_size;
  ParamCount c;
  c.word_embedding = m.vocab_size * h;
  if (m.position_embedding == PositionEmbedding::kLearned) {
    c.position_embedding = m.max_position_embeddings * h;
  }
  const std::int64_t qkv_out = m.q_size() + 2 * m.kv_size();
  c.layer_attention = h * qkv_out + m.q_size() * h;
  if (m.qkv_bias) c.layer_attention += qkv_out;
  if (m.attention_output_bias) c.layer_attention += h;
  if (m.moe.is_moe()) {
    c.layer_mlp = m.moe.num_experts * mlp_params(m, m.moe.expert_ffn_hidden_size) +
                  h * m.moe.num_experts;  // router
  } else {
    c.layer_mlp = mlp_params(m, m.ffn_hidden_size);
  }
  c.layer_norms = 2 * norm_params(m, h);
  c.final_norm = norm_params(m, h);
  c.lm_head = m.tied_embeddings ? 0 : m.vocab_size * h;
  return c;
}

std::int64_t total_params(const Model& m) {
  return count_params(m).total(m.num_layers);
}

}  // namespace trainsim
