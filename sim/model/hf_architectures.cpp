// The architectures a Hugging Face config.json may name, each read into trainsim's model: the
// keys that shape parameters and FLOPs, with the defaults Hugging Face's classes take.
#include "sim/model/hf_reader.hpp"

namespace trainsim::hf {

namespace {

FfnKind activation_kind(HfReader& r, const char* key, const char* fallback, bool gated) {
  std::string act = r.string_or(key, fallback);
  if (act == "silu" || act == "swish") {
    if (!gated) r.fail(key, "\"silu\" without a gated MLP is not supported");
    return FfnKind::kSwiGLU;
  }
  if (act.rfind("gelu", 0) == 0) return gated ? FfnKind::kGeGLU : FfnKind::kGelu;
  if (act == "relu2") return FfnKind::kSquaredRelu;
  if (act == "relu") return FfnKind::kRelu;
  r.fail(key, "unsupported activation \"" + act + "\"");
}

void read_llama_like(HfReader& r, Model& m, bool qwen2) {
  m.hidden_size = r.integer("hidden_size");
  m.num_layers = r.integer("num_hidden_layers");
  m.num_attention_heads = r.integer("num_attention_heads");
  m.num_kv_heads = r.integer_or("num_key_value_heads", m.num_attention_heads);
  m.head_dim = r.integer_or("head_dim", 0);
  m.ffn_hidden_size = r.integer("intermediate_size");
  m.vocab_size = r.integer("vocab_size");
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  m.max_position_embeddings = r.integer_or("max_position_embeddings", 0);
  m.position_embedding = PositionEmbedding::kRope;
  m.norm = NormKind::kRMSNorm;
  m.ffn_kind = activation_kind(r, "hidden_act", "silu", true);
  if (qwen2) {
    m.qkv_bias = true;  // Qwen2 projects Q, K and V with biases, the output without
  } else {
    bool attention_bias = r.boolean_or("attention_bias", false);
    m.qkv_bias = attention_bias;
    m.attention_output_bias = attention_bias;
    m.mlp_bias = r.boolean_or("mlp_bias", false);
  }
}

// Routed experts of one width: their count under `count_key`, Hugging Face's top-k key.
void read_experts(HfReader& r, Model& m, const char* count_key, std::int64_t width) {
  m.moe.num_experts = r.integer(count_key);
  m.moe.experts_per_token = r.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = width;
}

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
  m.moe.num_experts = r.integer("n_routed_experts");
  m.moe.experts_per_token = r.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = r.integer("moe_intermediate_size");
  m.moe.shared_expert_ffn_hidden_size =
      r.integer_or("n_shared_experts", 0) * m.moe.expert_ffn_hidden_size;
  m.moe.first_dense_layers = r.integer_or("first_k_dense_replace", 0);
  if (r.integer_or("moe_layer_freq", 1) != 1) {
    r.fail("moe_layer_freq", "only 1 (every layer after the dense ones) is supported");
  }
  m.moe.router_expert_bias = r.string_or("topk_method", "greedy") == "noaux_tc";
  m.mtp_layers = r.integer_or("num_nextn_predict_layers", 0, {0, Model::kMaxMtpLayers});
}

// Qwen's MoE layers (Qwen2-MoE, Qwen3-MoE): num_experts of moe_intermediate_size, every
// decoder_sparse_step-th layer (the others dense MLPs of intermediate_size).
void read_qwen_experts(HfReader& r, Model& m) {
  m.moe.num_experts = r.integer("num_experts");
  m.moe.experts_per_token = r.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = r.integer("moe_intermediate_size");
  m.moe.layer_interval = r.integer_or("decoder_sparse_step", 1);
  if (r.present("mlp_only_layers") && !r.json().at("mlp_only_layers").empty()) {
    r.fail("mlp_only_layers", "dense layers listed one by one are not supported");
  }
}

// Qwen3 and Qwen3-MoE: a per-head RMSNorm on queries and keys.
void read_qwen3(HfReader& r, Model& m, bool moe) {
  read_llama_like(r, m, false);
  m.qk_norm = true;
  if (moe) read_qwen_experts(r, m);
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

// A sliding window over every layer, or over the layers layer_types names "sliding_attention"
// where the others ("full_attention") come every k-th layer.
void read_sliding_window(HfReader& r, Model& m) {
  if (!r.present("sliding_window")) return;
  m.local_attention.kind = LocalAttention::Kind::kSliding;
  m.local_attention.size = r.integer("sliding_window");
  if (!r.present("layer_types")) return;
  const auto& types = r.json().at("layer_types");
  if (!types.is_array()) {
    r.fail("layer_types",
           "must be an array of \"full_attention\" and \"sliding_attention\", got " + got(types));
  }
  std::int64_t every = 0;
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (types[i] == "full_attention") {
      every = static_cast<std::int64_t>(i) + 1;
      break;
    }
  }
  for (std::size_t i = 0; i < types.size(); ++i) {
    const bool global = every > 0 && (static_cast<std::int64_t>(i) + 1) % every == 0;
    if (types[i] != (global ? "full_attention" : "sliding_attention")) {
      r.fail("layer_types", "only full attention every k-th layer, sliding between, is supported");
    }
  }
  m.local_attention.global_every = every;
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

void read_llama(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
}

void read_mistral(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  read_sliding_window(r, m);
}

void read_qwen2(HfReader& r, Model& m) {
  read_llama_like(r, m, true);
}

void read_mixtral(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  read_experts(r, m, "num_local_experts", m.ffn_hidden_size);
}

void read_qwen3_dense(HfReader& r, Model& m) {
  read_qwen3(r, m, false);
}

void read_qwen3_moe(HfReader& r, Model& m) {
  read_qwen3(r, m, true);
}

// The multimodal Llama 4 checkpoint holds the text model's keys in text_config.
void read_llama4_multimodal(HfReader& r, Model& m) {
  const auto& text = r.raw("text_config");
  if (!text.is_object()) r.fail("text_config", "must be an object, got " + got(text));
  HfReader tr(text, r.file(), "$.text_config");
  read_llama4_text(tr, m);
}

void read_gpt2(HfReader& r, Model& m) {
  m.hidden_size = r.integer("n_embd");
  m.num_layers = r.integer("n_layer");
  m.num_attention_heads = r.integer("n_head");
  m.num_kv_heads = m.num_attention_heads;
  m.ffn_hidden_size = r.integer_or("n_inner", 4 * m.hidden_size);
  m.vocab_size = r.integer("vocab_size");
  m.max_position_embeddings = r.integer("n_positions");
  m.position_embedding = PositionEmbedding::kLearned;
  m.norm = NormKind::kLayerNorm;
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", true);
  m.ffn_kind = activation_kind(r, "activation_function", "gelu_new", false);
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = true;
}

void read_gpt_neox(HfReader& r, Model& m) {
  m.hidden_size = r.integer("hidden_size");
  m.num_layers = r.integer("num_hidden_layers");
  m.num_attention_heads = r.integer("num_attention_heads");
  m.num_kv_heads = m.num_attention_heads;
  m.ffn_hidden_size = r.integer("intermediate_size");
  m.vocab_size = r.integer("vocab_size");
  m.max_position_embeddings = r.integer_or("max_position_embeddings", 0);
  m.position_embedding = PositionEmbedding::kRope;
  m.norm = NormKind::kLayerNorm;
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  m.ffn_kind = activation_kind(r, "hidden_act", "gelu", false);
  bool bias = r.boolean_or("attention_bias", true);
  m.qkv_bias = m.attention_output_bias = bias;
  m.mlp_bias = true;
}

void read_nemotron(HfReader& r, Model& m) {
  m.hidden_size = r.integer("hidden_size");
  m.num_layers = r.integer("num_hidden_layers");
  m.num_attention_heads = r.integer("num_attention_heads");
  m.num_kv_heads = r.integer_or("num_key_value_heads", m.num_attention_heads);
  m.head_dim = r.integer_or("head_dim", r.integer_or("kv_channels", 0));
  m.ffn_hidden_size = r.integer("intermediate_size");
  m.vocab_size = r.integer("vocab_size");
  m.max_position_embeddings = r.integer_or("max_position_embeddings", 0);
  m.position_embedding = PositionEmbedding::kRope;
  m.norm = NormKind::kLayerNorm;  // LayerNorm1P: weight and bias
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  m.ffn_kind = activation_kind(r, "hidden_act", "relu2", false);
  bool bias = r.boolean_or("attention_bias", false);
  m.qkv_bias = m.attention_output_bias = bias;
  m.mlp_bias = r.boolean_or("mlp_bias", false);
}

// Each architecture a config may name (its first "architectures" entry) and its reader; the
// unsupported-architecture message lists the named ones in this order (aliases unlisted).
struct ArchitectureReader {
  const char* architecture;
  void (*read)(HfReader&, Model&);
  bool listed = true;
};

const ArchitectureReader kArchitectures[] = {
    {"LlamaForCausalLM", read_llama},
    {"MistralForCausalLM", read_mistral},
    {"MixtralForCausalLM", read_mixtral},
    {"Qwen2ForCausalLM", read_qwen2},
    {"Qwen2MoeForCausalLM", read_qwen2_moe},
    {"Qwen3ForCausalLM", read_qwen3_dense},
    {"Qwen3MoeForCausalLM", read_qwen3_moe},
    {"DeepseekV2ForCausalLM", read_deepseek},
    {"DeepseekV3ForCausalLM", read_deepseek},
    {"Llama4ForConditionalGeneration", read_llama4_multimodal},
    {"Llama4ForCausalLM", read_llama4_text},
    {"GptOssForCausalLM", read_gpt_oss},
    {"Grok1ModelForCausalLM", read_grok1},
    {"Grok1ForCausalLM", read_grok1, false},
    {"GPT2LMHeadModel", read_gpt2},
    {"GPTNeoXForCausalLM", read_gpt_neox},
    {"NemotronForCausalLM", read_nemotron},
};

}  // namespace

ArchitectureRead require_architecture(const JsonObject& o, std::string_view key,
                                      const std::string& architecture) {
  std::string supported;
  for (const auto& a : kArchitectures) {
    if (architecture == a.architecture) return a.read;
    if (!a.listed) continue;
    if (!supported.empty()) supported += ", ";
    supported += a.architecture;
  }
  o.fail(key, "unsupported architecture \"" + architecture + "\" (supported: " + supported + ")");
}

}  // namespace trainsim::hf
