#include "sim/model/model_writer.hpp"

namespace trainsim {

namespace {

nlohmann::ordered_json moe_json(const MoeSpec& moe) {
  nlohmann::ordered_json j;
  j["num_experts"] = moe.num_experts;
  j["experts_per_token"] = moe.experts_per_token;
  j["expert_ffn_hidden_size"] = moe.expert_ffn_hidden_size;
  if (moe.shared_expert_ffn_hidden_size > 0) {
    j["shared_expert_ffn_hidden_size"] = moe.shared_expert_ffn_hidden_size;
  }
  if (moe.shared_expert_gate) j["shared_expert_gate"] = true;
  if (moe.first_dense_layers > 0) j["first_dense_layers"] = moe.first_dense_layers;
  if (moe.layer_interval != 1) j["layer_interval"] = moe.layer_interval;
  if (!moe.layers.empty()) j["layers"] = moe.layers;
  if (moe.router_bias) j["router_bias"] = true;
  if (moe.router_expert_bias) j["router_expert_bias"] = true;
  return j;
}

nlohmann::ordered_json mla_json(const MlaSpec& mla) {
  nlohmann::ordered_json j;
  if (mla.q_lora_rank > 0) j["q_lora_rank"] = mla.q_lora_rank;
  j["kv_lora_rank"] = mla.kv_lora_rank;
  j["qk_nope_head_dim"] = mla.qk_nope_head_dim;
  j["qk_rope_head_dim"] = mla.qk_rope_head_dim;
  j["v_head_dim"] = mla.v_head_dim;
  return j;
}

nlohmann::ordered_json local_attention_json(const LocalAttention& local) {
  nlohmann::ordered_json j;
  j["kind"] = local.kind == LocalAttention::Kind::kSliding ? "sliding" : "chunked";
  j["size"] = local.size;
  if (local.global_every > 0) j["global_every"] = local.global_every;
  return j;
}

nlohmann::ordered_json published_json(const PublishedParams& p) {
  nlohmann::ordered_json j;
  for (const auto& [key, value] : {std::pair{"total", p.total},
                                   {"embedding", p.embedding},
                                   {"non_embedding", p.non_embedding},
                                   {"active", p.active}}) {
    if (value > 0) j[key] = value;
  }
  if (p.active_with_embedding) j["active_with_embedding"] = true;
  if (p.truncated) j["truncated"] = true;
  if (p.rounded_to != 1) j["rounded_to"] = p.rounded_to;
  j["source"] = p.source;
  return j;
}

}  // namespace

nlohmann::ordered_json model_json(const Model& m) {
  nlohmann::ordered_json j;
  j["name"] = m.name;
  if (!m.source.empty()) j["source"] = m.source;
  if (!m.architecture.empty()) j["architecture"] = m.architecture;
  j["hidden_size"] = m.hidden_size;
  j["num_layers"] = m.num_layers;
  j["num_attention_heads"] = m.num_attention_heads;
  j["num_kv_heads"] = m.num_kv_heads;
  // The reader derives it from the hidden size, or from MLA's widths.
  if (!m.mla.is_mla() && m.head_dim * m.num_attention_heads != m.hidden_size) {
    j["head_dim"] = m.head_dim;
  }
  j["ffn_hidden_size"] = m.ffn_hidden_size;
  j["ffn_kind"] = to_string(m.ffn_kind);
  j["vocab_size"] = m.vocab_size;
  j["tied_embeddings"] = m.tied_embeddings;
  j["position_embedding"] = to_string(m.position_embedding);
  if (m.max_position_embeddings > 0) j["max_position_embeddings"] = m.max_position_embeddings;
  j["norm"] = to_string(m.norm);
  j["bias"] = {
      {"qkv", m.qkv_bias}, {"attention_output", m.attention_output_bias}, {"mlp", m.mlp_bias}};
  if (m.moe.is_moe()) j["moe"] = moe_json(m.moe);
  if (m.mla.is_mla()) j["mla"] = mla_json(m.mla);
  if (m.local_attention.kind != LocalAttention::Kind::kNone) {
    j["local_attention"] = local_attention_json(m.local_attention);
  }
  for (const auto& [key, on] : {std::pair{"qk_norm", m.qk_norm},
                                {"qk_norm_across_heads", m.qk_norm_across_heads},
                                {"sandwich_norms", m.sandwich_norms},
                                {"attention_sinks", m.attention_sinks}}) {
    if (on) j[key] = true;
  }
  if (m.mtp_layers > 0) j["mtp_layers"] = m.mtp_layers;
  if (m.published.any()) j["published_params"] = published_json(m.published);
  return j;
}

}  // namespace trainsim
