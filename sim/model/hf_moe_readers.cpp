// The mixture-of-experts architectures a Hugging Face config.json may name, each read into
// trainsim's model: the attention as its dense relative has it, then the experts' keys.
#include "sim/model/hf_readers.hpp"

#include <functional>
#include <vector>

#include "sim/model/params.hpp"

namespace trainsim::hf {

namespace {

// The MoE layers a config's own rule marks; `key` named where the rule leaves none.
void moe_layers_by_rule(HfReader& r, Model& m, const char* key,
                        const std::function<bool(std::int64_t)>& moe) {
  std::vector<bool> layers;
  for (std::int64_t i = 0; i < m.num_layers; ++i) layers.push_back(moe(i));
  if (!set_moe_layers(m, layers)) r.fail(key, "leaves no MoE layer");
}

// Routed experts of one width: their count under `count_key`, Hugging Face's top-k key.
void read_experts(HfReader& r, Model& m, const char* count_key, std::int64_t width) {
  m.moe.num_experts = r.integer(count_key);
  m.moe.experts_per_token = r.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = width;
}

// Qwen's MoE layers (Qwen2-MoE, Qwen3-MoE): num_experts of moe_intermediate_size, every
// decoder_sparse_step-th layer (the others dense MLPs of intermediate_size).
void read_qwen_experts(HfReader& r, Model& m) {
  m.moe.num_experts = r.integer("num_experts");
  m.moe.experts_per_token = r.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = r.integer("moe_intermediate_size");
  const std::int64_t step = r.integer_or("decoder_sparse_step", 1);
  m.moe.layer_interval = step;
  if (!r.present("mlp_only_layers") || r.json().at("mlp_only_layers").empty()) return;
  // transformers' rule: an MoE layer where (i + 1) % decoder_sparse_step == 0 and i is not
  // among mlp_only_layers.
  const auto dense = listed_layers(r.json().at("mlp_only_layers"), m.num_layers);
  if (!dense) {
    r.fail("mlp_only_layers", "must list layer indices below num_hidden_layers (" +
                                  std::to_string(m.num_layers) + ")");
  }
  moe_layers_by_rule(r, m, "mlp_only_layers", [&](std::int64_t i) {
    return !(*dense)[static_cast<std::size_t>(i)] && (i + 1) % step == 0;
  });
}

// DeepSeek's MoE keys (GLM-4.5's too): n_routed_experts of moe_intermediate_size, n_shared_experts
// of the same width beside them, after first_k_dense_replace dense layers.
void read_deepseek_experts(HfReader& r, Model& m) {
  m.moe.num_experts = r.integer("n_routed_experts");
  m.moe.experts_per_token = r.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = r.integer("moe_intermediate_size");
  m.moe.shared_expert_ffn_hidden_size =
      r.integer_or("n_shared_experts", 0) * m.moe.expert_ffn_hidden_size;
  m.moe.first_dense_layers = r.integer_or("first_k_dense_replace", 0);
}

}  // namespace

// DeepSeek V2 and V3: multi-head latent attention, shared experts beside the routed ones,
// leading dense layers; V3's router adds a score-correction bias per expert ("noaux_tc").
void read_deepseek(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  m.num_kv_heads = m.num_attention_heads;
  m.mla.q_lora_rank = r.integer_or("q_lora_rank", 0);
  m.mla.kv_lora_rank = r.integer("kv_lora_rank");
  m.mla.qk_nope_head_dim = r.integer("qk_nope_head_dim");
  m.mla.qk_rope_head_dim = r.integer("qk_rope_head_dim");
  m.mla.v_head_dim = r.integer("v_head_dim");
  m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
  read_deepseek_experts(r, m);
  // transformers' rule: an MoE layer from first_k_dense_replace on where i % moe_layer_freq == 0.
  if (const std::int64_t freq = r.integer_or("moe_layer_freq", 1); freq != 1) {
    const std::int64_t first = m.moe.first_dense_layers;
    moe_layers_by_rule(r, m, "moe_layer_freq",
                       [&](std::int64_t i) { return i >= first && i % freq == 0; });
  }
  m.moe.router_expert_bias = r.string_or("topk_method", "greedy") == "noaux_tc";
  m.mtp_layers = r.integer_or("num_nextn_predict_layers", 0, {0, Model::kMaxMtpLayers});
}

void read_qwen3_moe(HfReader& r, Model& m) {
  read_qwen3_dense(r, m);
  read_qwen_experts(r, m);
}

// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2's Q/K/V biases, and beside the routed experts
// a shared expert of shared_expert_intermediate_size whose output a sigmoid gate scales.
void read_qwen2_moe(HfReader& r, Model& m) {
  read_llama_like(r, m, true);
  read_qwen_experts(r, m);
  m.moe.shared_expert_ffn_hidden_size = r.integer("shared_expert_intermediate_size");
  m.moe.shared_expert_gate = true;
}

// Llama 4 (text model): MoE layers every interleave_moe_layer_step layers with one shared
// expert of the experts' width; dense layers of intermediate_size_mlp.
void read_llama4_text(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  const std::int64_t expert = m.ffn_hidden_size;
  m.ffn_hidden_size = r.integer_or("intermediate_size_mlp", expert);
  read_experts(r, m, "num_local_experts", expert);
  m.moe.shared_expert_ffn_hidden_size = expert;
  m.moe.layer_interval = r.integer_or("interleave_moe_layer_step", 1);
  // Chunked attention on the layers with rotary positions; every nope_layer_interval-th layer
  // (no positions) attends globally (Hugging Face's default no_rope_layers).
  if (r.present("attention_chunk_size")) {
    m.local_attention.kind = LocalAttention::Kind::kChunked;
    m.local_attention.size = r.integer("attention_chunk_size");
    m.local_attention.global_every = r.integer_or("nope_layer_interval", 4);
    if (r.present("no_rope_layers")) {
      r.fail("no_rope_layers", "layers listed one by one are not supported");
    }
  }
}

// The multimodal Llama 4 checkpoint holds the text model's keys in text_config.
void read_llama4_multimodal(HfReader& r, Model& m) {
  const auto& text = r.raw("text_config");
  if (!text.is_object()) r.fail("text_config", "must be an object, got " + got(text));
  HfReader tr(text, r.file(), "$.text_config");
  read_llama4_text(tr, m);
}

// GPT-OSS: biases on every attention projection, on the experts and the router, and a learned
// attention sink per head.
void read_gpt_oss(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  m.qkv_bias = m.attention_output_bias = r.boolean_or("attention_bias", true);
  m.mlp_bias = true;
  m.attention_sinks = true;
  read_experts(r, m, "num_local_experts", m.ffn_hidden_size);
  m.moe.router_bias = true;
  read_sliding_window(r, m);
}

// Grok-1 as ported to Hugging Face: Mixtral-like experts, embeddings tied to the output.
void read_grok1(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", true);
  m.ffn_kind = FfnKind::kGeGLU;  // Grok-1's experts are GELU-gated
  m.sandwich_norms = true;       // RMSNorms before and after attention and the experts
  read_experts(r, m, "num_experts", m.ffn_hidden_size);
}

// OLMoE: OLMo 2's q/k norms over all heads before Llama's pre-norms, and every layer's
// num_experts of intermediate_size.
void read_olmoe(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  m.qk_norm = m.qk_norm_across_heads = true;
  read_experts(r, m, "num_experts", m.ffn_hidden_size);
}

// GLM-4.5: DeepSeek-V3's experts (shared ones, leading dense layers, a score-correction bias per
// expert, multi-token prediction) under grouped-query attention with biases on q, k and v only,
// per-head q/k norms where use_qk_norm says so.
void read_glm4_moe(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  m.qkv_bias = r.boolean_or("attention_bias", false);
  m.attention_output_bias = false;
  m.qk_norm = r.boolean_or("use_qk_norm", false);
  read_deepseek_experts(r, m);
  m.moe.router_expert_bias = true;
  m.mtp_layers = r.integer_or("num_nextn_predict_layers", 0, {0, Model::kMaxMtpLayers});
}

void read_mixtral(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  read_experts(r, m, "num_local_experts", m.ffn_hidden_size);
}

}  // namespace trainsim::hf
