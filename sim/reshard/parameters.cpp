#include "sim/reshard/parameters.hpp"

#include <array>
#include <utility>
#include <vector>

#include "sim/model/params.hpp"

namespace trainsim {

const char* to_string(TpSplit split) {
  switch (split) {
    case TpSplit::kReplicated:
      return "replicated";
    case TpSplit::kRows:
      return "dim 0";
    case TpSplit::kColumns:
      return "dim 1";
  }
  return "?";
}

namespace {

// `text` with the digits that follow the first `marker` replaced by "*".
std::string star_index(std::string text, const std::string& marker) {
  const std::size_t at = text.find(marker);
  if (at == std::string::npos) return text;
  const std::size_t digits = at + marker.size();
  std::size_t end = digits;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
  if (end == digits) return text;
  return text.replace(digits, end - digits, "*");
}

}  // namespace

std::string ParamSpec::kind() const {
  const std::string out = block == BlockKind::kDecoder ? star_index(name, "model.layers.") : name;
  return star_index(star_index(out, ".experts."), "[");
}

std::int64_t ParamSpec::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

namespace {

// An MLP's gate, up and down projections.
struct Projections {
  const char* gate;
  const char* up;
  const char* down;
};
constexpr Projections kLlamaProjections = {"gate_proj", "up_proj", "down_proj"};

// Where a checkpoint's names differ from Llama's, by the Hugging Face class that saves it.
struct Names {
  std::string prefix;  // before every name
  std::string attention = "self_attn.";
  std::string norm_weight = "weight";  // a norm's scale
  std::string mlp = "mlp.";            // a dense layer's MLP and an MoE layer's block
  std::string moe = "mlp.";            // an MoE layer's router, experts and shared expert
  std::string router = "gate.";        // the router's linear layer
  std::string shared = "shared_experts.";
  /// A routed expert's gate, up and down projections.
  Projections expert = kLlamaProjections;
  /// Every expert's gate and up in one [E, hidden, 2 x ffn] tensor, their downs in one
  /// [E, ffn, hidden] ([in, out] per expert: the transpose of a linear layer's weight).
  bool fused_experts = false;
  /// A layer's two norms (Llama's before attention and before the MLP; OLMo 2's after each), or
  /// its four with sandwich norms (before and after each: Grok-1's port's names by default).
  std::array<std::string, 2> norms = {"input_layernorm", "post_attention_layernorm"};
  std::array<std::string, 4> sandwich = {"pre_attn_norm", "post_attn_norm", "pre_moe_norm",
                                         "post_moe_norm"};
  /// Phi-3's q/k/v in one qkv_proj and a dense MLP's gate and up in one gate_up_proj.
  bool fused_projections = false;
};

// Mixtral's names where the model has nothing Mixtral lacks (a model file naming no class).
bool looks_like_mixtral(const Model& m) {
  const MoeSpec& e = m.moe;
  return !m.mla.is_mla() && !m.qk_norm && !m.attention_sinks && !m.sandwich_norms &&
         e.shared_expert_ffn_hidden_size == 0 && e.first_dense_layers == 0 &&
         e.layer_interval == 1 && e.layers.empty() && !e.router_bias;
}

// Llama's, DeepSeek's and Qwen3's names (mlp.gate, mlp.experts.E.gate_proj, mlp.shared_experts)
// unless the class is Mixtral's (block_sparse_moe, w1/w3/w2), Grok-1's port's (attn, moe_block,
// each expert's linear/linear_v/linear_1, norms' scale), Qwen2-MoE's (mlp.shared_expert beside
// mlp.shared_expert_gate), GPT-OSS's (mlp.router, fused experts with their biases) or Llama 4's
// (feed_forward, router, fused experts, shared_expert; the multimodal class keeps the language
// model under "language_model.").
Names names_of(const Model& m) {
  Names n;
  const std::string& a = m.architecture;
  if (a == "MixtralForCausalLM" || (a.empty() && looks_like_mixtral(m))) {
    n.moe = "block_sparse_moe.";
    n.expert = {"w1", "w3", "w2"};
  } else if (a.rfind("Grok1", 0) == 0) {
    n.attention = "attn.";
    n.norm_weight = "scale";
    n.moe = "moe_block.";
    n.expert = {"linear", "linear_v", "linear_1"};
  } else if (a == "Qwen2MoeForCausalLM") {
    n.shared = "shared_expert.";
  } else if (a == "GptOssForCausalLM") {
    n.router = "router.";
    n.fused_experts = true;
  } else if (a.rfind("Gemma", 0) == 0) {
    if (a == "Gemma3ForConditionalGeneration") n.prefix = "language_model.";
    n.sandwich = {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"};
  } else if (a == "Olmo2ForCausalLM") {
    n.norms = {"post_attention_layernorm", "post_feedforward_layernorm"};
  } else if (a == "Phi3ForCausalLM") {
    n.fused_projections = true;
  } else if (a.rfind("Llama4", 0) == 0) {
    if (a == "Llama4ForConditionalGeneration") n.prefix = "language_model.";
    n.mlp = n.moe = "feed_forward.";
    n.router = "router.";
    n.shared = "shared_expert.";
    n.fused_experts = true;
  }
  return n;
}

// One decoder layer's tensors, named "model.layers.<index>.": a main-model layer (block kDecoder,
// its layer) or a multi-token-prediction module's (block kMtp, module k, named after the last
// layer as DeepSeek's checkpoints number it).
struct LayerBuilder {
  const Model& m;
  const Names& names;
  std::int64_t index;
  BlockKind block;
  std::int64_t block_layer;
  std::vector<ParamSpec>& out;
  std::int64_t expert = -1;  // the routed expert whose tensors add() is adding

  void add(const std::string& suffix, std::vector<std::int64_t> shape, TpSplit split) {
    out.push_back({names.prefix + "model.layers." + std::to_string(index) + "." + suffix, block,
                   block_layer, std::move(shape), split, false, expert});
  }
  void norm(const std::string& name, std::int64_t width, TpSplit split = TpSplit::kReplicated) {
    add(name + "." + names.norm_weight, {width}, split);
    if (m.norm == NormKind::kLayerNorm) add(name + ".bias", {width}, split);
  }
  void norm(const std::string& name) { norm(name, m.hidden_size); }
  void attention();
  void latent_attention();
  void mlp(const std::string& prefix, std::int64_t ffn, const Projections& proj);
  void fused_expert(const std::string& experts);
  void experts();
  void layer(bool moe_layer);
};

// Grouped-query attention: q/k/v column-parallel (Phi-3's in one tensor, a TP rank holding its
// share of each), o row-parallel.
void LayerBuilder::attention() {
  const std::int64_t h = m.hidden_size;
  using Projection = std::pair<const char*, std::int64_t>;
  std::vector<Projection> projections = {
      {"q_proj", m.q_size()}, {"k_proj", m.kv_size()}, {"v_proj", m.kv_size()}};
  if (names.fused_projections) projections = {{"qkv_proj", m.q_size() + 2 * m.kv_size()}};
  for (const auto& [proj, width] : projections) {
    add(names.attention + proj + ".weight", {width, h}, TpSplit::kRows);
    if (m.qkv_bias) add(names.attention + proj + ".bias", {width}, TpSplit::kRows);
  }
  add(names.attention + "o_proj.weight", {h, m.q_size()}, TpSplit::kColumns);
}

// Multi-head latent attention as DeepSeek's checkpoints hold it: the down-projections (query,
// and joint key-value with the rotary key) and their norms replicated over TP (Megatron-Core
// duplicates them), the up-projections column-parallel, o row-parallel.
void LayerBuilder::latent_attention() {
  const MlaSpec& a = m.mla;
  const std::int64_t h = m.hidden_size, heads = m.num_attention_heads;
  const std::int64_t q_out = heads * (a.qk_nope_head_dim + a.qk_rope_head_dim);
  if (a.q_lora_rank > 0) {
    add(names.attention + "q_a_proj.weight", {a.q_lora_rank, h}, TpSplit::kReplicated);
    norm(names.attention + "q_a_layernorm", a.q_lora_rank);
    add(names.attention + "q_b_proj.weight", {q_out, a.q_lora_rank}, TpSplit::kRows);
  } else {
    add(names.attention + "q_proj.weight", {q_out, h}, TpSplit::kRows);
  }
  add(names.attention + "kv_a_proj_with_mqa.weight", {a.kv_lora_rank + a.qk_rope_head_dim, h},
      TpSplit::kReplicated);
  norm(names.attention + "kv_a_layernorm", a.kv_lora_rank);
  add(names.attention + "kv_b_proj.weight",
      {heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank}, TpSplit::kRows);
  add(names.attention + "o_proj.weight", {h, m.v_size()}, TpSplit::kColumns);
}

// One MLP (a dense layer's, a shared expert's or one routed expert's): gate/up column-parallel
// with their biases, down row-parallel with its bias replicated.
void LayerBuilder::mlp(const std::string& prefix, std::int64_t ffn, const Projections& proj) {
  const std::int64_t h = m.hidden_size;
  const bool gated = is_gated(m.ffn_kind);
  if (gated && names.fused_projections) {
    add(prefix + "gate_up_proj.weight", {2 * ffn, h}, TpSplit::kRows);
  } else {
    if (gated) add(prefix + proj.gate + ".weight", {ffn, h}, TpSplit::kRows);
    add(prefix + proj.up + ".weight", {ffn, h}, TpSplit::kRows);
  }
  if (m.mlp_bias) {
    if (gated) add(prefix + proj.gate + ".bias", {ffn}, TpSplit::kRows);
    add(prefix + proj.up + ".bias", {ffn}, TpSplit::kRows);
  }
  add(prefix + proj.down + ".weight", {h, ffn}, TpSplit::kColumns);
  if (m.mlp_bias) add(prefix + proj.down + ".bias", {h}, TpSplit::kReplicated);
}

// Routed expert `expert`'s slices of the fused tensors `experts` + "gate_up_proj" and
// "down_proj" (and GPT-OSS's biases), each named "<tensor>[<expert>]": expert TP splits the ffn
// dimension, dim 1 of gate/up and dim 0 of down.
void LayerBuilder::fused_expert(const std::string& experts) {
  const std::int64_t h = m.hidden_size, ffn = m.moe.expert_ffn_hidden_size;
  const std::int64_t width = is_gated(m.ffn_kind) ? 2 * ffn : ffn;
  const std::string at = "[" + std::to_string(expert) + "]";
  add(experts + "gate_up_proj" + at, {h, width}, TpSplit::kColumns);
  if (m.mlp_bias) add(experts + "gate_up_proj_bias" + at, {width}, TpSplit::kRows);
  add(experts + "down_proj" + at, {ffn, h}, TpSplit::kRows);
  if (m.mlp_bias) add(experts + "down_proj_bias" + at, {h}, TpSplit::kReplicated);
}

// An MoE layer: the router (replicated; with GPT-OSS's learned bias, not DeepSeek's expert bias,
// a buffer), the routed experts, then a shared expert and its gate (replicated).
void LayerBuilder::experts() {
  const std::string& moe = names.moe;
  add(moe + names.router + "weight", {m.moe.num_experts, m.hidden_size}, TpSplit::kReplicated);
  if (m.moe.router_bias) {
    add(moe + names.router + "bias", {m.moe.num_experts}, TpSplit::kReplicated);
  }
  for (expert = 0; expert < m.moe.num_experts; ++expert) {
    if (names.fused_experts) {
      fused_expert(moe + "experts.");
    } else {
      mlp(moe + "experts." + std::to_string(expert) + ".", m.moe.expert_ffn_hidden_size,
          names.expert);
    }
  }
  expert = -1;
  if (m.moe.shared_expert_ffn_hidden_size > 0) {
    mlp(moe + names.shared, m.moe.shared_expert_ffn_hidden_size, kLlamaProjections);
  }
  if (m.moe.shared_expert_gate) {
    add(moe + "shared_expert_gate.weight", {1, m.hidden_size}, TpSplit::kReplicated);
  }
}

// A decoder layer: its norms (Grok-1's four under its own names), attention and MLP.
void LayerBuilder::layer(bool moe_layer) {
  norm(m.sandwich_norms ? names.sandwich[0] : names.norms[0]);
  if (m.mla.is_mla()) {
    latent_attention();
  } else {
    attention();
  }
  if (m.attention_output_bias)
    add(names.attention + "o_proj.bias", {m.hidden_size}, TpSplit::kReplicated);
  if (m.qk_norm_across_heads) {
    norm(names.attention + "q_norm", m.q_size(), TpSplit::kRows);
    norm(names.attention + "k_norm", m.kv_size(), TpSplit::kRows);
  } else if (m.qk_norm) {
    norm(names.attention + "q_norm", m.head_dim);
    norm(names.attention + "k_norm", m.head_dim);
  }
  if (m.attention_sinks) add(names.attention + "sinks", {m.num_attention_heads}, TpSplit::kRows);
  if (m.sandwich_norms) {
    for (std::size_t i = 1; i < names.sandwich.size(); ++i) norm(names.sandwich[i]);
  } else {
    norm(names.norms[1]);
  }
  if (moe_layer) {
    experts();
  } else {
    mlp(names.mlp, m.ffn_hidden_size, kLlamaProjections);
  }
}

// Multi-token-prediction module k as DeepSeek's checkpoints hold it, numbered after the main
// layers: the norms of the embedding and of the hidden states, their projection (column-parallel,
// as Megatron-Core's), a decoder layer like the model's last, and the norm before the shared
// LM head. The embedding and the head it uses are the main model's.
void add_mtp_module(const Model& m, const Names& names, std::int64_t k,
                    std::vector<ParamSpec>& out) {
  const std::int64_t h = m.hidden_size;
  LayerBuilder b{m, names, m.num_layers + k, BlockKind::kMtp, k, out};
  b.norm("enorm");
  b.norm("hnorm");
  b.add("eh_proj.weight", {h, 2 * h}, TpSplit::kRows);
  b.layer(mtp_layer_is_moe(m));
  b.norm("shared_head.norm");
}

}  // namespace

std::vector<ParamSpec> model_parameters(const Model& m) {
  const Names names = names_of(m);
  std::vector<ParamSpec> out;
  const std::int64_t h = m.hidden_size;
  auto add = [&](const std::string& name, BlockKind block, std::vector<std::int64_t> shape,
                 TpSplit split, bool vocabulary) {
    out.push_back({names.prefix + name, block, -1, std::move(shape), split, vocabulary});
  };
  add("model.embed_tokens.weight", BlockKind::kEmbedding, {m.vocab_size, h}, TpSplit::kRows, true);
  if (m.position_embedding == PositionEmbedding::kLearned) {
    add("model.embed_positions.weight", BlockKind::kEmbedding, {m.max_position_embeddings, h},
        TpSplit::kReplicated, false);
  }
  for (std::int64_t l = 0; l < m.num_layers; ++l) {
    LayerBuilder{m, names, l, BlockKind::kDecoder, l, out}.layer(is_moe_layer(m, l));
  }
  add("model.norm." + names.norm_weight, BlockKind::kFinalNorm, {h}, TpSplit::kReplicated, false);
  if (m.norm == NormKind::kLayerNorm) {
    add("model.norm.bias", BlockKind::kFinalNorm, {h}, TpSplit::kReplicated, false);
  }
  for (std::int64_t k = 0; k < m.mtp_layers; ++k) add_mtp_module(m, names, k, out);
  if (!m.tied_embeddings) {
    add("lm_head.weight", BlockKind::kLmHead, {m.vocab_size, h}, TpSplit::kRows, true);
  }
  return out;
}

}  // namespace trainsim
