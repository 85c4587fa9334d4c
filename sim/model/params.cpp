#include "sim/model/params.hpp"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainsim {

bool is_local_attention_layer(const Model& m, std::int64_t layer) {
  const LocalAttention& a = m.local_attention;
  if (a.kind == LocalAttention::Kind::kNone) return false;
  return a.global_every == 0 || (layer + 1) % a.global_every != 0;
}

namespace {

// MoeSpec's rule: after `first` dense layers, the last layer of each group of `interval`.
bool by_rule(std::int64_t first, std::int64_t interval, std::int64_t layer) {
  return layer >= first && (layer + 1) % interval == 0;
}

}  // namespace

bool is_moe_layer(const Model& m, std::int64_t layer) {
  if (!m.moe.is_moe()) return false;
  if (!m.moe.layers.empty()) {
    return std::binary_search(m.moe.layers.begin(), m.moe.layers.end(), layer);
  }
  return by_rule(m.moe.first_dense_layers, m.moe.layer_interval, layer);
}

std::int64_t moe_layer_count(const Model& m) {
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < m.num_layers; ++i) n += is_moe_layer(m, i) ? 1 : 0;
  return n;
}

bool set_moe_layers(Model& m, const std::vector<bool>& moe) {
  std::vector<std::int64_t> at;  // the MoE layers
  for (std::size_t i = 0; i < moe.size(); ++i) {
    if (moe[i]) at.push_back(static_cast<std::int64_t>(i));
  }
  if (at.empty() || static_cast<std::int64_t>(moe.size()) != m.num_layers) return false;
  const std::int64_t gap = at.size() > 1 ? at[1] - at[0] : at[0] + 1;
  const std::pair<std::int64_t, std::int64_t> candidates[] = {
      {0, gap}, {at[0], gap}, {0, at[0] + 1}, {at[0], 1}};
  for (const auto& [first, interval] : candidates) {
    bool same = true;
    for (std::int64_t layer = 0; same && layer < m.num_layers; ++layer) {
      same = moe[static_cast<std::size_t>(layer)] == by_rule(first, interval, layer);
    }
    if (same) {
      m.moe.first_dense_layers = first;
      m.moe.layer_interval = interval;
      m.moe.layers.clear();
      return true;
    }
  }
  m.moe.first_dense_layers = 0;
  m.moe.layer_interval = 1;
  m.moe.layers = std::move(at);
  return true;
}

std::optional<std::vector<bool>> listed_layers(const nlohmann::json& list,
                                               std::int64_t num_layers) {
  if (!list.is_array()) return std::nullopt;
  std::vector<bool> out(static_cast<std::size_t>(num_layers), false);
  for (const auto& l : list) {
    if (!l.is_number_integer() || l.get<std::int64_t>() < 0 ||
        l.get<std::int64_t>() >= num_layers) {
      return std::nullopt;
    }
    out[static_cast<std::size_t>(l.get<std::int64_t>())] = true;
  }
  return out;
}

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

std::int64_t gating_params(const Model& m) {
  const std::int64_t gate = m.moe.shared_expert_gate ? m.hidden_size : 0;
  return m.moe.num_experts * (m.hidden_size + (m.moe.router_bias ? 1 : 0)) + gate;
}

namespace {

// Multi-head latent attention: the query path (plain, or down-projection, its norm and
// up-projection), the joint key-value down-projection with the rotary key, its norm, the
// key-value up-projection and the output projection.
std::int64_t mla_params(const Model& m) {
  const MlaSpec& a = m.mla;
  const std::int64_t h = m.hidden_size, heads = m.num_attention_heads;
  const std::int64_t q_out = heads * (a.qk_nope_head_dim + a.qk_rope_head_dim);
  const std::int64_t q =
      a.q_lora_rank > 0 ? h * a.q_lora_rank + norm_params(m, a.q_lora_rank) + a.q_lora_rank * q_out
                        : h * q_out;
  const std::int64_t kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) +
                          norm_params(m, a.kv_lora_rank) +
                          a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim);
  return q + kv + m.v_size() * h;
}

std::int64_t attention_params(const Model& m) {
  const std::int64_t h = m.hidden_size;
  std::int64_t n = 0;
  if (m.mla.is_mla()) {
    n = mla_params(m);
  } else {
    const std::int64_t qkv_out = m.q_size() + 2 * m.kv_size();
    n = h * qkv_out + m.q_size() * h;
    if (m.qkv_bias) n += qkv_out;
  }
  if (m.attention_output_bias) n += h;
  n += norm_params(m, m.qk_norm_widths());
  if (m.attention_sinks) n += m.num_attention_heads;
  return n;
}

}  // namespace

ParamCount count_params(const Model& m) {
  const std::int64_t h = m.hidden_size;
  ParamCount c;
  c.word_embedding = m.vocab_size * h;
  if (m.position_embedding == PositionEmbedding::kLearned) {
    c.position_embedding = m.max_position_embeddings * h;
  }
  c.layer_attention = attention_params(m);
  if (m.moe.is_moe()) {
    c.layer_mlp =
        m.moe.num_experts * mlp_params(m, m.moe.expert_ffn_hidden_size) + gating_params(m);
    if (m.moe.shared_expert_ffn_hidden_size > 0) {
      c.layer_mlp += mlp_params(m, m.moe.shared_expert_ffn_hidden_size);
    }
  } else {
    c.layer_mlp = mlp_params(m, m.ffn_hidden_size);
  }
  c.dense_layer_mlp = mlp_params(m, m.ffn_hidden_size);
  c.moe_layers = moe_layer_count(m);
  c.layer_norms = (m.sandwich_norms ? 4 : 2) * norm_params(m, h);
  c.final_norm = norm_params(m, h);
  c.lm_head = m.tied_embeddings ? 0 : m.vocab_size * h;
  return c;
}

std::int64_t total_params(const Model& m) {
  return count_params(m).total(m.num_layers);
}

std::int64_t layer_params(const Model& m, std::int64_t layer) {
  return count_params(m).layer(is_moe_layer(m, layer));
}

std::int64_t active_params(const Model& m) {
  const ParamCount c = count_params(m);
  std::int64_t active = c.total(m.num_layers) - c.position_embedding;
  if (!m.tied_embeddings) active -= c.word_embedding;  // a row is read, not multiplied
  if (!m.moe.is_moe()) return active;
  const std::int64_t idle = m.moe.num_experts - m.moe.experts_per_token;
  return active - c.moe_layers * idle * mlp_params(m, m.moe.expert_ffn_hidden_size);
}

bool mtp_layer_is_moe(const Model& m) {
  return is_moe_layer(m, m.num_layers - 1);
}

std::int64_t mtp_module_params(const Model& m) {
  const ParamCount c = count_params(m);
  const std::int64_t h = m.hidden_size;
  return 3 * norm_params(m, h) + 2 * h * h + c.layer(mtp_layer_is_moe(m));
}

}  // namespace trainsim
