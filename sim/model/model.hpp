#pragma once
// Architecture of a decoder-only transformer: shapes only, no parallelism and no hardware.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  /// Width of the always-active shared expert MLP beside the routed ones (DeepSeek's
  /// n_shared_experts x moe_intermediate_size, Llama 4's shared expert); 0: none.
  std::int64_t shared_expert_ffn_hidden_size = 0;
  /// The shared expert's output scaled per token by a learned sigmoid gate, a [1, hidden] weight
  /// (Qwen2-MoE's shared_expert_gate, Megatron-Core's --moe-shared-expert-gate).
  bool shared_expert_gate = false;
  /// Leading decoder layers with a dense MLP of ffn_hidden_size (DeepSeek's
  /// first_k_dense_replace).
  std::int64_t first_dense_layers = 0;
  /// After those, layer i (from 0) is an MoE layer when (i + 1) % layer_interval == 0, the
  /// others dense (Llama 4's interleave_moe_layer_step, Qwen3's decoder_sparse_step).
  std::int64_t layer_interval = 1;
  /// The MoE layers (ascending, from 0) where the rule above cannot place them (Megatron's
  /// --moe-layer-freq k and DeepSeek's moe_layer_freq put the MoE layer first in each group of
  /// k, Qwen's mlp_only_layers skips any layer); empty: the rule. With a list, first_dense_layers
  /// is 0 and layer_interval 1.
  std::vector<std::int64_t> layers;
  /// The router has a learned bias, one per expert (GPT-OSS): a parameter like its weight.
  bool router_bias = false;
  /// Auxiliary-loss-free load balancing (DeepSeek-V3's score-correction bias, Megatron-Core's
  /// --moe-router-enable-expert-bias): one fp32 bias per expert added to the scores for the
  /// choice of experts, a buffer, not a parameter. Each MoE layer's router counts its tokens per
  /// expert (a second fp32 buffer); after every step the counts are all-reduced over the
  /// pipeline stage's TP x CP x DP ranks and each bias moves by a fixed rate towards balance.
  bool router_expert_bias = false;
  bool is_moe() const { return num_experts > 0; }
};

/// DeepSeek's multi-head latent attention: queries through a low-rank bottleneck (q_lora_rank,
/// 0 for a plain projection), keys and values from a shared latent of kv_lora_rank plus one
/// rotary key of qk_rope_head_dim; per head, qk_nope_head_dim + qk_rope_head_dim for scores and
/// v_head_dim for values. Model::head_dim is the score width (nope + rope).
struct MlaSpec {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;  // 0: not MLA
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  bool is_mla() const { return kv_lora_rank > 0; }
};

/// Local attention on some decoder layers: each query attends to the `size` keys before it
/// (sliding: Mistral's and GPT-OSS's sliding_window) or to the keys of its own block of `size`
/// tokens (chunked: Llama 4's attention_chunk_size); the other layers attend to the whole
/// sequence. A layer is global where (layer + 1) % global_every == 0 (GPT-OSS 2, Llama 4 4);
/// global_every 0: every layer is local.
struct LocalAttention {
  enum class Kind { kNone, kSliding, kChunked };
  Kind kind = Kind::kNone;
  std::int64_t size = 0;
  std::int64_t global_every = 0;
};

/// Parameter counts published by the model's authors, for tests: exact when rounded_to == 1.
/// "Embedding" counts the input embeddings and the untied output layer. 0 = not published.
struct PublishedParams {
  std::int64_t total = 0;
  std::int64_t embedding = 0;
  std::int64_t non_embedding = 0;
  std::int64_t active = 0;  // parameters a token passes through (MoE: top-k experts)
  /// Whether `active` counts the input embedding (Qwen, Meta) or not (DeepSeek, OpenAI).
  bool active_with_embedding = false;
  std::int64_t rounded_to = 1;
  /// The figures are cut to rounded_to, not rounded (30.53B published as "30.5B", 3.35B as
  /// "3.3B").
  bool truncated = false;
  std::string source;
  bool any() const { return total > 0 || embedding > 0 || non_embedding > 0; }
};

/// A key the file holds that changes the cost but is not simulated.
struct UnmodelledKey {
  std::string note;                 // "FILE: $.key: what is left out"
  std::string effect;               // what that does to the numbers
  std::int64_t beyond_seq_len = 0;  // matters only at longer sequences (a sliding window's size)
};

struct Model {
  std::string name;
  std::string source;  // where the shapes come from
  /// The Hugging Face class whose checkpoints hold the model (a config.json's first
  /// "architectures" entry, a model file's "architecture"): how its tensors are named. Empty when
  /// a model file names none.
  std::string architecture;
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
  bool sandwich_norms = false;  // norms after attention and MLP too (Grok-1, Gemma 2): four a layer
  bool qk_norm = false;         // a per-head norm (the model's kind) on queries and keys (Qwen3)
  /// The q/k norms span every head at once (OLMoE, OLMo 2): weights of q_size and kv_size, split
  /// over TP with the heads, instead of one head_dim each that every head shares.
  bool qk_norm_across_heads = false;
  bool attention_sinks = false;  // a learned sink logit per head (GPT-OSS)
  MoeSpec moe;
  MlaSpec mla;
  LocalAttention local_attention;
  /// Multi-token-prediction modules trained after the last decoder layer (DeepSeek-V3's
  /// num_nextn_predict_layers, Megatron-Core's --mtp-num-layers): module k predicts token k + 1
  /// ahead from the main model's hidden states and the embedding of the token k ahead, through
  /// two norms, a projection of 2 x hidden to hidden, one decoder layer like the model's last, a
  /// norm and the shared LM head with its own loss. Not counted in the published totals.
  std::int64_t mtp_layers = 0;
  static constexpr std::int64_t kMaxMtpLayers = 16;
  PublishedParams published;
  /// Keys of the file that change the cost but are not simulated (a Hugging Face config's
  /// multi-token prediction, say); a run warns of them.
  std::vector<UnmodelledKey> unmodelled;

  std::int64_t q_size() const { return num_attention_heads * head_dim; }
  std::int64_t kv_size() const { return num_kv_heads * head_dim; }
  /// The q and k norms' weights (and biases) of one layer.
  std::int64_t qk_norm_widths() const {
    if (!qk_norm) return 0;
    return qk_norm_across_heads ? q_size() + kv_size() : 2 * head_dim;
  }
  /// Width of the attention output before the output projection (heads x value head size).
  std::int64_t v_size() const {
    return mla.is_mla() ? num_attention_heads * mla.v_head_dim : q_size();
  }
};

/// Whether decoder layer `layer` (from 0) routes its tokens to experts (MoeSpec's rule).
bool is_moe_layer(const Model& m, std::int64_t layer);
/// Whether decoder layer `layer` (from 0) attends locally (LocalAttention's rule).
bool is_local_attention_layer(const Model& m, std::int64_t layer);
/// How many of the model's decoder layers are MoE layers (0 for a dense model).
std::int64_t moe_layer_count(const Model& m);
/// Makes exactly the decoder layers `moe` marks (one entry per layer) the MoE layers: by the
/// spec's rule where it holds them (leading dense layers, then groups of equal size each ending in
/// an MoE layer), else as a list. False (the spec unchanged) where `moe` has no MoE layer or not
/// one entry per layer.
bool set_moe_layers(Model& m, const std::vector<bool>& moe);
/// One flag per decoder layer, set for each index a config's list of layers names; nothing where
/// `list` is not a list of integers in [0, num_layers).
std::optional<std::vector<bool>> listed_layers(const nlohmann::json& list, std::int64_t num_layers);

/// Loads our model JSON, or a Hugging Face config.json (recognised by its "architectures" key).
Model load_model(const std::filesystem::path& path);
/// Parses our strict model JSON (unknown keys are errors); `file` names it in messages.
Model parse_model_json(const nlohmann::json& j, const std::string& file);
/// Reads a Hugging Face config.json as-is: the fields that shape the architecture are read,
/// the rest (tokenizer ids, dtype, ...) ignored. Unsupported architectures are errors.
Model parse_hf_config(const nlohmann::json& j, const std::string& file);

/// Checks the cross-field rules (heads divide hidden, KV heads divide heads, ...); InputError
/// naming `file` and the model JSON's key ("file: $.num_kv_heads") otherwise.
void validate_model(const Model& m, const std::string& file);
/// The same, each failure named by `where` from the model JSON's key ("moe.num_experts"): a
/// reader of another format names the key its file holds.
using ModelKeyPath = std::function<std::string(std::string_view key)>;
void validate_model(const Model& m, const ModelKeyPath& where);

}  // namespace trainsim
