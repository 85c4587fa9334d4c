#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/model/hf_reader.hpp"
#include "sim/model/model.hpp"

namespace trainsim {

bool is_gated(FfnKind kind) {
  return kind == FfnKind::kSwiGLU || kind == FfnKind::kGeGLU;
}

const char* to_string(FfnKind kind) {
  switch (kind) {
    case FfnKind::kSwiGLU:
      return "swiglu";
    case FfnKind::kGeGLU:
      return "geglu";
    case FfnKind::kGelu:
      return "gelu";
    case FfnKind::kSquaredRelu:
      return "squared_relu";
    case FfnKind::kRelu:
      return "relu";
  }
  return "?";
}

const char* to_string(PositionEmbedding kind) {
  switch (kind) {
    case PositionEmbedding::kRope:
      return "rope";
    case PositionEmbedding::kLearned:
      return "learned";
    case PositionEmbedding::kNone:
      return "none";
  }
  return "?";
}

const char* to_string(NormKind kind) {
  return kind == NormKind::kRMSNorm ? "rmsnorm" : "layernorm";
}

namespace {

FfnKind parse_ffn_kind(const std::string& s) {
  if (s == "swiglu") return FfnKind::kSwiGLU;
  if (s == "geglu") return FfnKind::kGeGLU;
  if (s == "gelu") return FfnKind::kGelu;
  if (s == "squared_relu") return FfnKind::kSquaredRelu;
  return FfnKind::kRelu;
}

constexpr std::int64_t kMaxWidth = std::int64_t{1} << 22;  // hidden, FFN, heads, head_dim
constexpr std::int64_t kMaxLayers = std::int64_t{1} << 16;
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 30;
constexpr std::int64_t kMaxExperts = std::int64_t{1} << 12;
constexpr std::int64_t kMaxPositions = std::int64_t{1} << 24;
constexpr double kMaxParams = 1e15;
}  // namespace

namespace {

// Upper bounds far beyond any published model, which keep every count inside int64.
void check_limits(const Model& m, const ModelKeyPath& where) {
  const struct {
    const char* key;
    std::int64_t value;
    std::int64_t limit;
  } limits[] = {
      {"hidden_size", m.hidden_size, kMaxWidth},
      {"num_attention_heads", m.num_attention_heads, kMaxWidth},
      {"num_kv_heads", m.num_kv_heads, kMaxWidth},
      {"head_dim", m.head_dim, kMaxWidth},
      {"ffn_hidden_size", m.ffn_hidden_size, kMaxWidth},
      {"moe.expert_ffn_hidden_size", m.moe.expert_ffn_hidden_size, kMaxWidth},
      {"moe.shared_expert_ffn_hidden_size", m.moe.shared_expert_ffn_hidden_size, kMaxWidth},
      {"mla.q_lora_rank", m.mla.q_lora_rank, kMaxWidth},
      {"mla.kv_lora_rank", m.mla.kv_lora_rank, kMaxWidth},
      {"mla.qk_nope_head_dim", m.mla.qk_nope_head_dim, kMaxWidth},
      {"mla.qk_rope_head_dim", m.mla.qk_rope_head_dim, kMaxWidth},
      {"mla.v_head_dim", m.mla.v_head_dim, kMaxWidth},
      {"num_layers", m.num_layers, kMaxLayers},
      {"vocab_size", m.vocab_size, kMaxVocab},
      {"moe.num_experts", m.moe.num_experts, kMaxExperts},
      {"max_position_embeddings", m.max_position_embeddings, kMaxPositions}};
  for (const auto& l : limits) {
    if (l.value > l.limit) {
      fail_input(where(l.key),
                 "must be at most " + std::to_string(l.limit) + ", got " + std::to_string(l.value));
    }
  }
  // The parameter count in floating point first, so the exact count cannot overflow.
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_attention_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_kv_heads * m.head_dim);
  const double mlp = m.moe.is_moe() ? static_cast<double>(m.moe.num_experts) *
                                          static_cast<double>(m.moe.expert_ffn_hidden_size)
                                    : static_cast<double>(m.ffn_hidden_size);
  const double approx = static_cast<double>(m.num_layers) * (h * (2 * q + 2 * kv) + 3 * h * mlp) +
                        2 * h * static_cast<double>(m.vocab_size);
  if (approx > kMaxParams) {
    fail_input(where("num_layers"),
               "with these widths the model has about " +
                   std::to_string(static_cast<std::int64_t>(approx / 1e12)) +
                   " trillion parameters; trainsim handles up to 1,000 trillion");
  }
}

void check_attention(const Model& m, const ModelKeyPath& where) {
  if (m.num_kv_heads > m.num_attention_heads) {
    fail_input(where("num_kv_heads"), "must not exceed num_attention_heads (" +
                                          std::to_string(m.num_attention_heads) + ")");
  }
  if (m.num_attention_heads % m.num_kv_heads != 0) {
    fail_input(where("num_kv_heads"), "must divide num_attention_heads (" +
                                          std::to_string(m.num_attention_heads) + "), got " +
                                          std::to_string(m.num_kv_heads));
  }
  if (m.qk_norm_across_heads && (!m.qk_norm || m.mla.is_mla())) {
    fail_input(where("qk_norm_across_heads"), "needs qk_norm and attention without MLA");
  }
  if (m.position_embedding == PositionEmbedding::kLearned && m.max_position_embeddings <= 0) {
    fail_input(where("max_position_embeddings"), "is required with learned position embeddings");
  }
}

// An explicit list of MoE layers: ascending indices of decoder layers, in place of the rule.
void check_listed_moe_layers(const Model& m, const ModelKeyPath& where) {
  const std::vector<std::int64_t>& layers = m.moe.layers;
  if (layers.empty()) return;
  if (m.moe.first_dense_layers != 0 || m.moe.layer_interval != 1) {
    fail_input(where("moe.layers"),
               "replaces first_dense_layers and layer_interval: give one or the other");
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i] < 0 || layers[i] >= m.num_layers || (i > 0 && layers[i] <= layers[i - 1])) {
      fail_input(where("moe.layers"),
                 "must list decoder layers in ascending order, each from 0 to num_layers - 1 (" +
                     std::to_string(m.num_layers - 1) + "), got " + std::to_string(layers[i]) +
                     " at index " + std::to_string(i));
    }
  }
}

void check_experts(const Model& m, const ModelKeyPath& where) {
  if (m.moe.is_moe() && m.moe.experts_per_token > m.moe.num_experts) {
    fail_input(where("moe.experts_per_token"),
               "must not exceed moe.num_experts (" + std::to_string(m.moe.num_experts) + ")");
  }
  if (m.moe.layer_interval < 1 || m.moe.layer_interval > m.num_layers) {
    fail_input(where("moe.layer_interval"), "must be between 1 and num_layers (" +
                                                std::to_string(m.num_layers) + "), got " +
                                                std::to_string(m.moe.layer_interval));
  }
  if (m.moe.first_dense_layers < 0 || m.moe.first_dense_layers >= m.num_layers) {
    fail_input(where("moe.first_dense_layers"), "must leave at least one MoE layer (0 to " +
                                                    std::to_string(m.num_layers - 1) + "), got " +
                                                    std::to_string(m.moe.first_dense_layers));
  }
  check_listed_moe_layers(m, where);
  if (m.moe.shared_expert_ffn_hidden_size < 0) {
    fail_input(where("moe.shared_expert_ffn_hidden_size"), "must be >= 0");
  }
  if (m.moe.shared_expert_gate && m.moe.shared_expert_ffn_hidden_size == 0) {
    fail_input(where("moe.shared_expert_gate"),
               "needs a shared expert to gate (moe.shared_expert_ffn_hidden_size above 0)");
  }
}

void check_mla(const Model& m, const ModelKeyPath& where) {
  if (m.mla.is_mla() && m.mla.q_lora_rank < 0) {
    fail_input(where("mla.q_lora_rank"), "must be >= 0 (0: queries without a low-rank path)");
  }
  if (m.mla.is_mla() && m.num_kv_heads != m.num_attention_heads) {
    fail_input(where("num_kv_heads"),
               "must equal num_attention_heads with mla (every head has its own key and value)");
  }
}

void read_bias(JsonObject bias, Model& m) {
  m.qkv_bias = bias.optional_boolean("qkv").value_or(false);
  m.attention_output_bias = bias.optional_boolean("attention_output").value_or(false);
  m.mlp_bias = bias.optional_boolean("mlp").value_or(false);
  bias.finish();
}

void read_moe(JsonObject moe, Model& m) {
  m.moe.num_experts = moe.integer("num_experts", {2});
  m.moe.experts_per_token = moe.integer("experts_per_token");
  m.moe.expert_ffn_hidden_size =
      moe.optional_integer("expert_ffn_hidden_size").value_or(m.ffn_hidden_size);
  m.moe.shared_expert_ffn_hidden_size =
      moe.optional_integer("shared_expert_ffn_hidden_size").value_or(0);
  m.moe.shared_expert_gate = moe.optional_boolean("shared_expert_gate").value_or(false);
  m.moe.first_dense_layers = moe.optional_integer("first_dense_layers").value_or(0);
  m.moe.layer_interval = moe.optional_integer("layer_interval").value_or(1);
  if (moe.has("layers")) {
    const nlohmann::json& layers = moe.raw("layers");
    if (!layers.is_array() || layers.empty()) moe.fail("layers", "must be a list of layer indices");
    for (const auto& l : layers) {
      if (!l.is_number_integer()) moe.fail("layers", "must hold integers, got " + hf::got(l));
      m.moe.layers.push_back(l.get<std::int64_t>());
    }
  }
  m.moe.router_bias = moe.optional_boolean("router_bias").value_or(false);
  m.moe.router_expert_bias = moe.optional_boolean("router_expert_bias").value_or(false);
  moe.finish();
}

void read_mla(JsonObject mla, Model& m) {
  m.mla.q_lora_rank = mla.optional_integer("q_lora_rank").value_or(0);
  m.mla.kv_lora_rank = mla.integer("kv_lora_rank", {1});
  // Bounded here, not only in validate_model(): their sum is the head size.
  m.mla.qk_nope_head_dim = mla.integer("qk_nope_head_dim", {1, kMaxWidth});
  m.mla.qk_rope_head_dim = mla.integer("qk_rope_head_dim", {1, kMaxWidth});
  m.mla.v_head_dim = mla.integer("v_head_dim", {1});
  mla.finish();
  m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
}

void read_local_attention(JsonObject local, Model& m) {
  m.local_attention.kind = local.choice("kind", {"sliding", "chunked"}) == "sliding"
                               ? LocalAttention::Kind::kSliding
                               : LocalAttention::Kind::kChunked;
  m.local_attention.size = local.integer("size", {1});
  m.local_attention.global_every = local.optional_integer("global_every", {0}).value_or(0);
  local.finish();
}

void read_published_params(JsonObject pub, Model& m) {
  m.published.total = pub.optional_integer("total").value_or(0);
  m.published.embedding = pub.optional_integer("embedding").value_or(0);
  m.published.non_embedding = pub.optional_integer("non_embedding").value_or(0);
  m.published.active = pub.optional_integer("active").value_or(0);
  m.published.active_with_embedding = pub.optional_boolean("active_with_embedding").value_or(false);
  m.published.truncated = pub.optional_boolean("truncated").value_or(false);
  if (!m.published.any()) pub.fail("total", "give at least one of total, embedding, non_embedding");
  m.published.rounded_to = pub.optional_integer("rounded_to").value_or(1);
  m.published.source = pub.string("source");
  pub.finish();
}

// The widths every decoder layer shares: sizes, heads, FFN, vocabulary, positions and norm.
void read_dimensions(JsonObject& o, Model& m) {
  m.hidden_size = o.integer("hidden_size");
  m.num_layers = o.integer("num_layers");
  m.num_attention_heads = o.integer("num_attention_heads");
  m.num_kv_heads = o.optional_integer("num_kv_heads").value_or(m.num_attention_heads);
  if (auto hd = o.optional_integer("head_dim")) {
    m.head_dim = *hd;
  } else {
    if (m.hidden_size % m.num_attention_heads != 0) {
      o.fail("hidden_size", "is not divisible by num_attention_heads (" +
                                std::to_string(m.num_attention_heads) + "); give head_dim");
    }
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }
  m.ffn_hidden_size = o.integer("ffn_hidden_size");
  m.ffn_kind =
      parse_ffn_kind(o.choice("ffn_kind", {"swiglu", "geglu", "gelu", "squared_relu", "relu"}));
  m.vocab_size = o.integer("vocab_size");
  m.tied_embeddings = o.boolean("tied_embeddings");
  auto pos = o.choice("position_embedding", {"rope", "learned", "none"});
  m.position_embedding = pos == "rope"      ? PositionEmbedding::kRope
                         : pos == "learned" ? PositionEmbedding::kLearned
                                            : PositionEmbedding::kNone;
  m.max_position_embeddings = o.optional_integer("max_position_embeddings").value_or(0);
  m.norm = o.choice("norm", {"rmsnorm", "layernorm"}) == "rmsnorm" ? NormKind::kRMSNorm
                                                                   : NormKind::kLayerNorm;
}

}  // namespace

void validate_model(const Model& m, const ModelKeyPath& where) {
  check_limits(m, where);
  check_attention(m, where);
  check_experts(m, where);
  check_mla(m, where);
}

void validate_model(const Model& m, const std::string& file) {
  validate_model(m, [&file](std::string_view key) { return file + ": $." + std::string(key); });
}

Model parse_model_json(const nlohmann::json& j, const std::string& file) {
  JsonObject o(j, file);
  Model m;
  m.name = o.string("name");
  m.source = o.optional_string("source").value_or("");
  m.architecture = o.optional_string("architecture").value_or("");
  if (!m.architecture.empty()) hf::require_architecture(o, "architecture", m.architecture);
  read_dimensions(o, m);
  if (auto bias = o.optional_object("bias")) read_bias(*bias, m);
  if (auto moe = o.optional_object("moe")) read_moe(*moe, m);
  if (auto mla = o.optional_object("mla")) read_mla(*mla, m);
  if (auto local = o.optional_object("local_attention")) read_local_attention(*local, m);
  m.qk_norm = o.optional_boolean("qk_norm").value_or(false);
  m.qk_norm_across_heads = o.optional_boolean("qk_norm_across_heads").value_or(false);
  m.sandwich_norms = o.optional_boolean("sandwich_norms").value_or(false);
  m.attention_sinks = o.optional_boolean("attention_sinks").value_or(false);
  m.mtp_layers = o.optional_integer("mtp_layers", {0, Model::kMaxMtpLayers}).value_or(0);
  if (auto pub = o.optional_object("published_params")) read_published_params(*pub, m);
  o.allow({"notes"});
  o.finish();
  validate_model(m, file);
  return m;
}

Model load_model(const std::filesystem::path& path) {
  auto j = load_json_file(path);
  if (j.is_object() && j.contains("architectures")) return parse_hf_config(j, path.string());
  // Hugging Face's keys without the class that says how to read them.
  if (j.is_object() && !j.contains("name") &&
      (j.contains("model_type") || j.contains("num_hidden_layers"))) {
    fail_input(path.string() + ": $.architectures",
               "required key is missing: a Hugging Face config.json names its model class there "
               "(e.g. [\"LlamaForCausalLM\"]); trainsim's own model files have a \"name\" instead");
  }
  return parse_model_json(j, path.string());
}

}  // namespace trainsim
