#include "sim/cost/rank_params.hpp"

#include "sim/model/params.hpp"

namespace trainsim {

namespace {

// One layer's attention on a TP rank: the projections split (heads, with their sinks), MLA's
// down-projections and their norms whole (Megatron-Core's duplicated linears), the output bias
// and the q/k norms replicated.
std::int64_t attention_params_per_rank(const Model& m, std::int64_t tp) {
  std::int64_t replicated = m.attention_output_bias ? m.hidden_size : 0;
  if (m.qk_norm) replicated += 2 * norm_params(m, m.head_dim);
  if (m.mla.is_mla()) {
    const MlaSpec& a = m.mla;
    replicated +=
        m.hidden_size * (a.kv_lora_rank + a.qk_rope_head_dim) + norm_params(m, a.kv_lora_rank);
    if (a.q_lora_rank > 0) {
      replicated += m.hidden_size * a.q_lora_rank + norm_params(m, a.q_lora_rank);
    }
  }
  return (count_params(m).layer_attention - replicated) / tp + replicated;
}

// A dense MLP of width `ffn` on a TP rank: its matrices and up-projection bias split, its output
// bias replicated.
std::int64_t mlp_params_per_rank(const Model& m, std::int64_t ffn, std::int64_t tp) {
  const std::int64_t bias = m.mlp_bias ? m.hidden_size : 0;
  return (mlp_params(m, ffn) - bias) / tp + bias;
}

}  // namespace

std::int64_t layer_params_per_rank(const Model& m, std::int64_t tp) {
  return attention_params_per_rank(m, tp) + mlp_params_per_rank(m, m.ffn_hidden_size, tp) +
         count_params(m).layer_norms;
}

std::int64_t expert_params_per_rank(const Model& m, const Plan& plan) {
  if (!m.moe.is_moe()) return 0;
  // Each expert's matrices split over expert TP; its output bias replicated.
  const std::int64_t bias = m.mlp_bias ? m.hidden_size : 0;
  const std::int64_t expert = mlp_params(m, m.moe.expert_ffn_hidden_size) - bias;
  return m.moe.num_experts / plan.ep * (expert / plan.expert_tp() + bias);
}

std::int64_t layer_params_per_rank(const Model& m, const Plan& plan, bool moe_layer) {
  if (!m.moe.is_moe() || !moe_layer) return layer_params_per_rank(m, plan.tp);
  std::int64_t n = attention_params_per_rank(m, plan.tp) + count_params(m).layer_norms +
                   router_params(m) + expert_params_per_rank(m, plan);
  if (m.moe.shared_expert_ffn_hidden_size > 0) {
    n += mlp_params_per_rank(m, m.moe.shared_expert_ffn_hidden_size, plan.tp);
  }
  return n;
}

}  // namespace trainsim
