// The dense architectures a Hugging Face config.json may name, each read into trainsim's model:
// the keys that shape parameters and FLOPs, with the defaults Hugging Face's classes take; and the
// readers the mixture-of-experts architectures build on (Llama's layout, sliding windows).
#include "sim/model/hf_readers.hpp"

namespace trainsim::hf {

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

void read_llama(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
}

void read_mistral(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  read_sliding_window(r, m);
}

// Phi-3 (and Phi-4's dense models): Llama's shapes with fused q/k/v and gate/up projections, and a
// sliding window where the config sets one.
void read_phi3(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  read_sliding_window(r, m);
}

// OLMo 2: its norms on the attention and MLP outputs instead of their inputs (two a layer, as
// Llama's), and q/k norms over all heads at once.
void read_olmo2(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  m.qk_norm = m.qk_norm_across_heads = true;
}

void read_qwen2(HfReader& r, Model& m) {
  read_llama_like(r, m, true);
}

// Qwen3: a per-head RMSNorm on queries and keys.
void read_qwen3_dense(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  m.qk_norm = true;
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

}  // namespace trainsim::hf
