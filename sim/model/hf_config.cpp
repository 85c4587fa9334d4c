// Hugging Face config.json read as-is. Only the keys that shape the architecture are read; a
// config carries many others (token ids, dtype, rope scaling) that do not change parameter
// counts or FLOPs, so unknown keys are ignored here, unlike in our own model files.
#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/model/model.hpp"

namespace trainsim {

namespace {

constexpr std::int64_t kMaxConfigInteger = (std::int64_t{1} << 31) - 1;

// "a string \"x\"", "null": the value a message says it got.
std::string got(const nlohmann::json& value) {
  return value.is_null() ? "null" : json_type_name(value) + " " + json_excerpt(value);
}

class HfReader {
 public:
  HfReader(const nlohmann::json& j, std::string file, std::string path = "$")
      : j_(j), o_(j, std::move(file), std::move(path)) {}

  bool present(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  // Every size a config holds is far below 2^31; the bound keeps the sums and products the
  // readers form (MLA head sizes, shared experts x width, 4 x n_embd) from overflowing.
  std::int64_t integer(const char* key) { return o_.integer(key, {1, kMaxConfigInteger}); }
  /// A key whose absence means 0 may also say 0 (n_shared_experts, first_k_dense_replace).
  std::int64_t integer_or(const char* key, std::int64_t fallback) {
    return integer_or(key, fallback, {fallback == 0 ? 0 : 1, kMaxConfigInteger});
  }
  std::int64_t integer_or(const char* key, std::int64_t fallback, IntRange range) {
    return present(key) ? o_.integer(key, range) : fallback;
  }
  bool boolean_or(const char* key, bool fallback) {
    return present(key) ? o_.boolean(key) : fallback;
  }
  std::string string_or(const char* key, const char* fallback) {
    return present(key) ? o_.string(key) : fallback;
  }
  [[noreturn]] void fail(const char* key, const std::string& msg) const { o_.fail(key, msg); }
  /// The raw value of a key that must be present (any type).
  const nlohmann::json& raw(const char* key) { return o_.raw(key); }
  /// "FILE: $.key: msg", for a note rather than an error.
  std::string note(const char* key, const std::string& msg) const {
    return o_.where(key) + ": " + msg;
  }
  const nlohmann::json& json() const { return j_; }
  const std::string& file() const { return o_.file(); }

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
  m.moe.router_bias = r.string_or("topk_method", "greedy") == "noaux_tc";
  m.mtp_layers = r.integer_or("num_nextn_predict_layers", 0, {0, Model::kMaxMtpLayers});
}

// Qwen3 and Qwen3-MoE: a per-head RMSNorm on queries and keys; MoE layers every
// decoder_sparse_step layers.
void read_qwen3(HfReader& r, Model& m, bool moe) {
  read_llama_like(r, m, false);
  m.qk_norm = true;
  if (!moe) return;
  m.moe.num_experts = r.integer("num_experts");
  m.moe.experts_per_token = r.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = r.integer("moe_intermediate_size");
  m.moe.layer_interval = r.integer_or("decoder_sparse_step", 1);
  if (r.present("mlp_only_layers") && !r.json().at("mlp_only_layers").empty()) {
    r.fail("mlp_only_layers", "dense layers listed one by one are not supported");
  }
}

// Llama 4 (text model): MoE layers every interleave_moe_layer_step layers with one shared
// expert of the experts' width; dense layers of intermediate_size_mlp.
void read_llama4_text(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  const std::int64_t expert = m.ffn_hidden_size;
  m.ffn_hidden_size = r.integer_or("intermediate_size_mlp", expert);
  m.moe.num_experts = r.integer("num_local_experts");
  m.moe.experts_per_token = r.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = expert;
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
  m.moe.num_experts = r.integer("num_local_experts");
  m.moe.experts_per_token = r.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = m.ffn_hidden_size;
  m.moe.router_bias = true;
  read_sliding_window(r, m);
}

// Grok-1 as ported to Hugging Face: Mixtral-like experts, embeddings tied to the output.
void read_grok1(HfReader& r, Model& m) {
  read_llama_like(r, m, false);
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", true);
  m.ffn_kind = FfnKind::kGeGLU;  // Grok-1's experts are GELU-gated
  m.sandwich_norms = true;       // RMSNorms before and after attention and the experts
  m.moe.num_experts = r.integer("num_experts");
  m.moe.experts_per_token = r.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = m.ffn_hidden_size;
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
  m.moe.num_experts = r.integer("num_local_experts");
  m.moe.experts_per_token = r.integer("num_experts_per_tok");
  m.moe.expert_ffn_hidden_size = m.ffn_hidden_size;
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

const ArchitectureReader* find_architecture(const std::string& arch) {
  for (const auto& a : kArchitectures) {
    if (arch == a.architecture) return &a;
  }
  return nullptr;
}

std::string supported_architectures() {
  std::string out;
  for (const auto& a : kArchitectures) {
    if (!a.listed) continue;
    if (!out.empty()) out += ", ";
    out += a.architecture;
  }
  return out;
}

}  // namespace

namespace {

// The name reports give a Hugging Face model: the hub id it was saved from (_name_or_path, its
// last part), else the file's own name, else (a file called config.json) its folder's.
std::string hf_model_name(const nlohmann::json& j, const std::string& file) {
  if (auto it = j.find("_name_or_path"); it != j.end() && it->is_string()) {
    std::string id = it->get<std::string>();
    while (!id.empty() && id.back() == '/') id.pop_back();
    if (const auto slash = id.find_last_of('/'); slash != std::string::npos) id.erase(0, slash + 1);
    if (!id.empty()) return id;
  }
  const std::filesystem::path p(file);
  if (p.stem() != "config") return p.stem().string();
  const std::string folder = p.parent_path().filename().string();
  return folder.empty() || folder == "." ? p.stem().string() : folder;
}

// Keys present in the config that change the cost of training but that this reader leaves out:
// noted on the model, so that a run says what its numbers do not include.
void note_unmodelled(HfReader& r, Model& m, const std::string& arch) {
  const bool reads_window = arch == "MistralForCausalLM" || arch == "GptOssForCausalLM";
  const bool window_on = r.present("sliding_window") && r.boolean_or("use_sliding_window", true);
  if (window_on && !reads_window) {
    const std::int64_t window = r.integer("sliding_window");
    m.unmodelled.push_back(
        {r.note("sliding_window", "a sliding window of " + std::to_string(window) +
                                      " tokens is not modelled for " + arch +
                                      ": attention is costed over the whole sequence"),
         "read the attention time as an upper bound", window});
  }
}

}  // namespace

Model parse_hf_config(const nlohmann::json& j, const std::string& file) {
  JsonObject top(j, file);
  const auto& archs = top.raw("architectures");
  if (!archs.is_array() || archs.empty() || !archs[0].is_string()) {
    top.fail("architectures", "must be a non-empty array of strings, got " + got(archs));
  }
  const std::string arch = archs[0].get<std::string>();
  const ArchitectureReader* reader = find_architecture(arch);
  if (reader == nullptr) {
    top.fail("architectures", "unsupported architecture \"" + arch +
                                  "\" (supported: " + supported_architectures() + ")");
  }
  HfReader r(j, file);
  Model m;
  m.source = "Hugging Face config.json (" + arch + ")";
  reader->read(r, m);
  if (m.head_dim == 0) {
    if (m.hidden_size % m.num_attention_heads != 0) {
      r.fail("hidden_size", "is not divisible by num_attention_heads and head_dim is missing");
    }
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }
  if (m.name.empty()) m.name = hf_model_name(j, file);
  note_unmodelled(r, m, arch);
  validate_model(m, file);
  return m;
}

}  // namespace trainsim
