#include "sim/cost/attention_ops.hpp"

#include "sim/cost/kernel_specs.hpp"

namespace trainsim {

namespace {

// Megatron-Core's q_layernorm and k_layernorm (Qwen3's QK-norm): the model's norm over each head
// of the queries and of the keys, one row per token and head; or one row per token over the
// rank's heads where the norms span them (OLMoE), whose statistics' reduction over TP, two
// numbers a token, is left out.
void qk_norms(std::vector<KernelSpec>& k, const LayerShape& s, bool backward) {
  const std::string suffix = backward ? ".grad" : "";
  const std::string op = to_string(s.norm) + suffix;
  for (const auto& [name, width] : {std::pair{"q_layernorm", s.q}, {"k_layernorm", s.kv}}) {
    const double row = s.qk_norm_across_heads ? width : static_cast<double>(s.head_dim);
    k.push_back(elementwise(name + suffix, op, s.tokens * width / row, row));
  }
}

}  // namespace

void attention_in_forward(std::vector<KernelSpec>& k, const LayerShape& s) {
  const double T = s.tokens, h = s.hidden;
  const DType g = s.gemm_dtype;
  if (!s.is_mla()) {
    linear(k, "qkv_proj", T, h, s.q + 2.0 * s.kv, g);
    if (s.qk_norm) qk_norms(k, s, false);
    if (s.rope) k.push_back(elementwise("rope", "rope", T, s.q + s.kv));
    return;
  }
  const auto& a = s.mla;
  if (a.q_lora > 0) {
    linear(k, "q_down", T, h, a.q_lora, g);
    k.push_back(elementwise("q_norm", to_string(s.norm), T, a.q_lora));
    linear(k, "q_up", T, a.q_lora, a.q_up, g);
  } else {
    linear(k, "q_proj", T, h, a.q_up, g);
  }
  linear(k, "kv_down", T, h, a.kv_lora + a.rope, g);
  k.push_back(elementwise("kv_norm", to_string(s.norm), T, a.kv_lora));
  linear(k, "kv_up", T, a.kv_lora, a.kv_up, g);
  if (s.rope) k.push_back(elementwise("rope", "rope", T, s.q + a.rope));
}

void attention_in_backward(std::vector<KernelSpec>& k, const LayerShape& s) {
  const double T = s.tokens, h = s.hidden;
  const DType g = s.gemm_dtype;
  if (!s.is_mla()) {
    if (s.rope) k.push_back(elementwise("rope.grad", "rope.grad", T, s.q + s.kv));
    if (s.qk_norm) qk_norms(k, s, true);
    gemm_backward(k, "qkv_proj", T, h, s.q + 2.0 * s.kv, g);
    return;
  }
  const auto& a = s.mla;
  if (s.rope) k.push_back(elementwise("rope.grad", "rope.grad", T, s.q + a.rope));
  gemm_backward(k, "kv_up", T, a.kv_lora, a.kv_up, g);
  k.push_back(elementwise("kv_norm.grad", std::string(to_string(s.norm)) + ".grad", T, a.kv_lora));
  gemm_backward(k, "kv_down", T, h, a.kv_lora + a.rope, g);
  if (a.q_lora > 0) {
    gemm_backward(k, "q_up", T, a.q_lora, a.q_up, g);
    k.push_back(elementwise("q_norm.grad", std::string(to_string(s.norm)) + ".grad", T, a.q_lora));
    gemm_backward(k, "q_down", T, h, a.q_lora, g);
  } else {
    gemm_backward(k, "q_proj", T, h, a.q_up, g);
  }
}

std::vector<std::string> attention_in_gemms(const LayerShape& s) {
  if (!s.is_mla()) return {"qkv_proj"};
  if (s.mla.q_lora > 0) return {"q_down", "q_up", "kv_down", "kv_up"};
  return {"q_proj", "kv_down", "kv_up"};
}

std::string attention_in_gemm(const LayerShape& s) {
  return attention_in_gemms(s).front();
}

}  // namespace trainsim
