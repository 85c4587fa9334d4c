// Hugging Face config.json read as-is. Only the keys that shape the architecture are read; a
// config carries many others (token ids, dtype, rope scaling) that do not change parameter
// counts or FLOPs, so unknown keys are ignored here, unlike in our own model files.
#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/model/model.hpp"

namespace trainsim {

namespace {

class HfReader {
 public:
  HfReader(const nlohmann::json& j, std::string file) : j_(j), o_(j, std::move(file)) {}

  bool present(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  std::int64_t integer(const char* key) { return o_.integer(key); }
  std::int64_t integer_or(const char* key, std::int64_t fallback) {
    return present(key) ? o_.integer(key) : fallback;
  }
  bool boolean_or(const char* key, bool fallback) {
    return present(key) ? o_.boolean(key) : fallback;
  }
  std::string string_or(const char* key, const char* fallback) {
    return present(key) ? o_.string(key) : fallback;
  }
  [[noreturn]] void fail(const char* key, const std::string& msg) const { o_.fail(key, msg); }

 private:
  const nlohmann::json& j_;
  JsonObject o_;
};

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

}  // namespace

Model parse_hf_config(const nlohmann::json& j, const std::string& file) {
  JsonObject top(j, file);
  const auto& archs = top.raw("architectures");
  if (!archs.is_array() || archs.empty() || !archs[0].is_string()) {
    top.fail("architectures", "must be a non-empty array of strings");
  }
  const std::string arch = archs[0].get<std::string>();
  HfReader r(j, file);
  Model m;
  m.source = "Hugging Face config.json (" + arch + ")";
  if (arch == "LlamaForCausalLM" || arch == "MistralForCausalLM") {
    read_llama_like(r, m, false);
  } else if (arch == "Qwen2ForCausalLM") {
    read_llama_like(r, m, true);
  } else if (arch == "MixtralForCausalLM") {
    read_llama_like(r, m, false);
    m.moe.num_experts = r.integer("num_local_experts");
    m.moe.experts_per_token = r.integer("num_experts_per_tok");
    m.moe.expert_ffn_hidden_size = m.ffn_hidden_size;
  } else if (arch == "GPT2LMHeadModel") {
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
  } else if (arch == "GPTNeoXForCausalLM") {
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
  } else if (arch == "NemotronForCausalLM") {
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
  } else {
    top.fail("architectures",
             "unsupported architecture \"" + arch +
                 "\" (supported: LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, "
                 "Qwen2ForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM, NemotronForCausalLM)");
  }
  if (m.head_dim == 0) {
    if (m.hidden_size % m.num_attention_heads != 0) {
      r.fail("hidden_size", "is not divisible by num_attention_heads and head_dim is missing");
    }
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }
  if (m.name.empty()) {
    m.name = std::filesystem::path(file).parent_path().filename().string();
    if (m.name.empty() || m.name == ".") m.name = std::filesystem::path(file).stem().string();
  }
  validate_model(m, file);
  return m;
}

}  // namespace trainsim
