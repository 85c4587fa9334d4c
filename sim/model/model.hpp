#pragma once
// Architecture of a decoder-only transformer: shapes only, no parallelism and no hardware.
#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace trainsim {

enum class FfnKind { kSwiGLU, kGeGLU, kGelu, kSquaredRelu, kRelu };
enum class PositionEmbedding { kRope, kLearned, kNone };
enum class NormKind { kRMSNorm, kLayerNorm };

/// True for gated MLPs (an extra "gate" projection: SwiGLU, GeGLU).
bool is_gated(FfnKind kind);
const char* to_string(FfnKind kind);
const char* to_string(PositionEmbedding kind);
const char* to_string(NormKind kind);

struct MoeSpec {
  std::int64_t num_experts = 0;        // 0: dense model
  std::int64_t experts_per_token = 0;  // top-k
  std::int64_t expert_ffn_hidden_size = 0;
  bool is_moe() const { return num_experts > 0; }
};

/// Parameter counts published by the model's authors, for tests: exact when rounded_to == 1.
/// "Embedding" counts the input embeddings and the untied output layer. 0 = not published.
struct PublishedParams {
  std::int64_t total = 0;
  std::int64_t embedding = 0;
  std::int64_t non_embedding = 0;
  std::int64_t rounded_to = 1;
  std::string source;
  bool any() const { return total > 0 || embedding > 0 || non_embedding > 0; }
};

struct Model {
  std::string name;
  std::string source;  // where the shapes come from
  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;  // per attention head; usually hidden_size / heads
  std::int64_t ffn_hidden_size = 0;
  FfnKind ffn_kind = FfnKind::kSwiGLU;
  std::int64_t vocab_size = 0;
  bool tied_embeddings = false;
  PositionEmbedding position_embedding = PositionEmbedding::kRope;
  std::int64_t max_position_embeddings = 0;  // 0 when unknown; needed for learned positions
  NormKind norm = NormKind::kRMSNorm;
  bool qkv_bias = false;
  bool attention_output_bias = false;
  bool mlp_bias = false;
  MoeSpec moe;
  PublishedParams published;

  std::int64_t q_size() const { return num_attention_heads * head_dim; }
  std::int64_t kv_size() const { return num_kv_heads * head_dim; }
};

/// Loads our model JSON, or a Hugging Face config.json (recognised by its "architectures" key).
Model load_model(const std::filesystem::path& path);
/// Parses our strict model JSON (unknown keys are errors); `file` names it in messages.
Model parse_model_json(const nlohmann::json& j, const std::string& file);
/// Reads a Hugging Face config.json as-is: the fields that shape the architecture are read,
/// the rest (tokenizer ids, dtype, ...) ignored. Unsupported architectures are errors.
Model parse_hf_config(const nlohmann::json& j, const std::string& file);

/// Checks the cross-field rules (heads divide hidden, KV heads divide heads, ...); InputError
/// naming `file` otherwise.
void validate_model(const Model& m, const std::string& file);

}  // namespace trainsim
