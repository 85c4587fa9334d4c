#include "sim/model/flops.hpp"

#include "sim/model/params.hpp"

namespace trainsim {

namespace {

double d(std::int64_t x) {
  return static_cast<double>(x);
}

// Weights of one layer's attention projections (no biases, no norms): the products each token
// goes through.
double attention_weights(const Model& m) {
  const double h = d(m.hidden_size);
  if (!m.mla.is_mla()) return h * (2.0 * d(m.q_size()) + 2.0 * d(m.kv_size()));
  const MlaSpec& a = m.mla;
  const double heads = d(m.num_attention_heads);
  const double q_out = heads * d(a.qk_nope_head_dim + a.qk_rope_head_dim);
  const double q = a.q_lora_rank > 0 ? d(a.q_lora_rank) * (h + q_out) : h * q_out;
  const double kv = h * d(a.kv_lora_rank + a.qk_rope_head_dim) +
                    d(a.kv_lora_rank) * heads * d(a.qk_nope_head_dim + a.v_head_dim);
  return q + kv + d(m.v_size()) * h;
}

}  // namespace

double model_flops_per_sample(const Model& m, std::int64_t seq_len, bool causal) {
  const double s = d(seq_len);
  const double h = d(m.hidden_size);
  const double gated = is_gated(m.ffn_kind) ? 3.0 : 2.0;  // weight matrices per MLP
  // Per token and layer, forward: 2 FLOPs per weight, plus QK^T and AV over the whole sequence
  // (or the causal half of it).
  const double scores = 2.0 * s * d(m.q_size() + m.v_size()) * (causal ? 0.5 : 1.0);
  const double attention = 2.0 * attention_weights(m) + scores;
  const double dense = attention + 2.0 * gated * h * d(m.ffn_hidden_size);
  // Multi-token-prediction modules count as layers like the last (Megatron-LM's count), with
  // their projection of 2h to h and three norms, and the logits once more each.
  const double mtp = d(m.mtp_layers);
  double layers = (d(m.num_layers) + mtp) * dense;
  if (m.moe.is_moe()) {
    // A token passes through top-k experts and the shared one; the router is not counted
    // (Megatron-LM's num_floating_point_operations does not count it either).
    const double width = d(m.moe.expert_ffn_hidden_size * m.moe.experts_per_token +
                           m.moe.shared_expert_ffn_hidden_size);
    const double moe = attention + 2.0 * gated * h * width;
    const double n_moe = d(moe_layer_count(m)) + (mtp_layer_is_moe(m) ? mtp : 0.0);
    layers = n_moe * moe + (d(m.num_layers) + mtp - n_moe) * dense;
  }
  layers += mtp * (2.0 * 2.0 * h * h + 2.0 * 3.0 * h);
  const double logits_fwd = 2.0 * h * d(m.vocab_size) * (1.0 + mtp);
  // Backward is twice the forward (data and weight gradients).
  return 3.0 * s * (layers + logits_fwd);
}

}  // namespace trainsim
