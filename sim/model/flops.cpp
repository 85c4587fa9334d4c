#include "sim/model/flops.hpp"

namespace trainsim {

double model_flops_per_sample(const Model& m, std::int64_t seq_len) {
  const double s = static_cast<double>(seq_len);
  const double h = static_cast<double>(m.hidden_size);
  const double layers = static_cast<double>(m.num_layers);
  const double q = static_cast<double>(m.q_size());
  const double kv = static_cast<double>(m.kv_size());
  const double gated = is_gated(m.ffn_kind) ? 3.0 : 2.0;  // weight matrices per MLP
  double mlp_width = static_cast<double>(m.ffn_hidden_size);
  if (m.moe.is_moe()) {
    mlp_width = static_cast<double>(m.moe.expert_ffn_hidden_size * m.moe.experts_per_token);
  }
  // Per token and layer, forward: 2 FLOPs per weight, plus QK^T and AV (2 * 2 * s * q).
  const double attention_weights = h * (2.0 * q + 2.0 * kv);  // Q, K, V and output projections
  double per_token_layer_fwd = 2.0 * attention_weights + 2.0 * gated * h * mlp_width + 4.0 * s * q;
  double logits_fwd = 2.0 * h * static_cast<double>(m.vocab_size);
  // Backward is twice the forward (data and weight gradients).
  return 3.0 * s * (layers * per_token_layer_fwd + logits_fwd);
}

}  // namespace trainsim
