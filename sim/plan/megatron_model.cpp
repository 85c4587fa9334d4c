// The model Megatron-LM builds from a launch's shape arguments (megatron/training/arguments.py's
// defaults and validate_args; Megatron-Core's GPT layer specs), for a launch given without a
// model file.
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/plan/megatron_arg_table.hpp"

namespace trainsim {

namespace {

// An argument that must be a positive integer (a width, a count).
std::int64_t positive(const MegatronArgs& a, const std::string& arg) {
  const std::int64_t v = a.integer(arg);
  if (v < 1) a.fail(arg, "must be a positive integer, got " + a.one(arg));
  return v;
}

std::int64_t positive_or(const MegatronArgs& a, const std::string& arg, std::int64_t fallback) {
  return a.has(arg) ? positive(a, arg) : fallback;
}

// A shape Megatron-LM requires (validate_args' required arguments).
std::int64_t required(const MegatronArgs& a, const std::string& arg) {
  if (!a.has(arg)) {
    a.fail(arg,
           "is missing: Megatron-LM needs it to build the model (or give --model M, a "
           "catalog name or a config.json, and the launch's shape arguments are checked "
           "against it)");
  }
  return positive(a, arg);
}

// The vocabulary the launch's tokenizer gives: the null tokenizer's --vocab-size (its
// end-of-document id the last of them, since Megatron-LM #4057, April 2026; one more before),
// or GPT-2's BPE vocabulary (50,257 tokens); other tokenizers read files trainsim does not.
std::int64_t tokenizer_vocab(const MegatronArgs& a) {
  const std::string arg = "--tokenizer-type";
  if (!a.has(arg)) {
    a.fail(arg,
           "is missing: the model's vocabulary is the tokenizer's (give --tokenizer-type "
           "NullTokenizer --vocab-size N, or --model M)");
  }
  const std::string& type = a.one(arg);
  if (type == "NullTokenizer") return required(a, "--vocab-size");
  if (type == "GPT2BPETokenizer") return 50257;
  a.fail(arg,
         type +
             " reads its vocabulary from a tokenizer file trainsim does not read: give --model "
             "M (a catalog name, or the model's config.json) for the model");
}

void position_embedding(const MegatronArgs& a, Model& m) {
  if (a.has("--max-position-embeddings")) {
    m.max_position_embeddings = positive(a, "--max-position-embeddings");
  }
  m.position_embedding = megatron_position_embedding(a).value_or(PositionEmbedding::kLearned);
  if (m.position_embedding == PositionEmbedding::kLearned) {
    m.max_position_embeddings = required(a, "--max-position-embeddings");
  }
}

// The MLP's kind and width: GeLU of 4h unless --swiglu (8h/3 rounded down to a multiple of 64)
// or --squared-relu.
void mlp(const MegatronArgs& a, Model& m) {
  if (a.has("--swiglu") && a.has("--squared-relu")) {
    a.fail("--squared-relu", "is given with --swiglu: give one");
  }
  m.ffn_kind = a.has("--swiglu")         ? FfnKind::kSwiGLU
               : a.has("--squared-relu") ? FfnKind::kSquaredRelu
                                         : FfnKind::kGelu;
  const std::int64_t h = m.hidden_size;
  m.ffn_hidden_size =
      positive_or(a, "--ffn-hidden-size", a.has("--swiglu") ? (4 * h * 2 / 3) / 64 * 64 : 4 * h);
}

void attention(const MegatronArgs& a, Model& m) {
  const std::int64_t heads = m.num_attention_heads;
  if (!a.has("--kv-channels") && m.hidden_size % heads != 0) {
    a.fail("--num-attention-heads", "must divide --hidden-size " + std::to_string(m.hidden_size) +
                                        ", or give --kv-channels");
  }
  m.head_dim = positive_or(a, "--kv-channels", m.hidden_size / heads);
  m.num_kv_heads =
      a.has("--group-query-attention") ? positive_or(a, "--num-query-groups", 1) : heads;
  // With MLA, Megatron-Core's q and k layernorms are the latents' norms, counted with MLA's.
  m.qk_norm = a.has("--qk-layernorm") && !a.has("--multi-latent-attention");
  if (!a.has("--multi-latent-attention")) return;
  // Megatron-LM's defaults: no query bottleneck, a latent of 32, heads of 128 + 64 and 128.
  m.mla.q_lora_rank = positive_or(a, "--q-lora-rank", 0);
  m.mla.kv_lora_rank = positive_or(a, "--kv-lora-rank", 32);
  m.mla.qk_nope_head_dim = positive_or(a, "--qk-head-dim", 128);
  m.mla.qk_rope_head_dim = positive_or(a, "--qk-pos-emb-head-dim", 64);
  m.mla.v_head_dim = positive_or(a, "--v-head-dim", 128);
  m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
  m.num_kv_heads = heads;
}

// --moe-layer-freq: every k-th layer from the first (k; 1: every layer), or a Python list of 0s and
// 1s, one per layer ("[0]*3+[1]*58", "([0]+[1])*24").
struct FreqParser {
  const std::string& text;
  std::size_t i = 0;
  bool ok = true;

  void skip() {
    while (i < text.size() && text[i] == ' ') ++i;
  }
  bool eat(char c) {
    skip();
    if (i < text.size() && text[i] == c) return ++i, true;
    return false;
  }
  std::int64_t number() {
    skip();
    std::int64_t v = 0;
    const std::size_t from = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && v < (1 << 20)) {
      v = v * 10 + (text[i++] - '0');
    }
    ok = ok && i > from;
    return v;
  }
  std::vector<int> atom() {
    std::vector<int> out;
    if (eat('(')) {
      out = expr();
      ok = ok && eat(')');
    } else if (eat('[')) {
      do out.push_back(static_cast<int>(number()));
      while (ok && eat(','));
      ok = ok && eat(']');
    } else {
      ok = false;
    }
    return out;
  }
  std::vector<int> term() {
    std::vector<int> unit = atom();
    if (!ok || !eat('*')) return unit;
    const std::int64_t n = number();
    std::vector<int> out;
    for (std::int64_t k = 0; ok && k < n && out.size() < (1u << 20); ++k) {
      out.insert(out.end(), unit.begin(), unit.end());
    }
    return out;
  }
  std::vector<int> expr() {
    std::vector<int> out = term();
    while (ok && eat('+')) {
      const std::vector<int> more = term();
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }
};

// Each layer's entry of --moe-layer-freq: an integer k as Megatron-Core expands it ([1 if i % k
// == 0 else 0 for i in range(num_layers)]), or the list it spells.
std::vector<int> freq_pattern(const MegatronArgs& a, const std::string& arg, std::int64_t layers) {
  const std::string& text = a.one(arg);
  if (!text.empty() && text.size() < 8 &&
      text.find_first_not_of("0123456789") == std::string::npos) {
    const std::int64_t k = std::stoll(text);
    if (k < 1) a.fail(arg, "must be at least 1, got " + text);
    std::vector<int> pattern;
    for (std::int64_t i = 0; i < layers; ++i) pattern.push_back(i % k == 0 ? 1 : 0);
    return pattern;
  }
  FreqParser p{text};
  std::vector<int> pattern = p.expr();
  p.skip();
  if (!p.ok || p.i != p.text.size()) {
    a.fail(arg, "must be an integer or a list of 0s and 1s, one per layer (\"[0]*3+[1]*58\")");
  }
  return pattern;
}

void moe_layers(const MegatronArgs& a, Model& m) {
  const std::string arg = "--moe-layer-freq";
  if (!a.has(arg) || a.one(arg) == "1") return;
  const std::vector<int> pattern = freq_pattern(a, arg, m.num_layers);
  if (static_cast<std::int64_t>(pattern.size()) != m.num_layers) {
    a.fail(arg, "has " + std::to_string(pattern.size()) + " entries for " +
                    std::to_string(m.num_layers) + " layers (--num-layers)");
  }
  std::vector<bool> moe;
  for (const int entry : pattern) {
    if (entry != 0 && entry != 1) a.fail(arg, "must hold 0s and 1s only");
    moe.push_back(entry == 1);
  }
  if (!set_moe_layers(m, moe)) {
    a.fail(arg, "has no MoE layer: for a dense model leave out --num-experts");
  }
}

void experts(const MegatronArgs& a, Model& m) {
  m.moe.num_experts = a.has("--num-experts") ? a.integer("--num-experts") : 0;
  if (m.moe.num_experts < 0) a.fail("--num-experts", "must not be negative");
  if (!m.moe.is_moe()) return;
  if (m.moe.num_experts < 2) a.fail("--num-experts", "must be at least 2 (0: a dense model)");
  m.moe.experts_per_token = positive_or(a, "--moe-router-topk", 2);
  m.moe.expert_ffn_hidden_size = positive_or(a, "--moe-ffn-hidden-size", m.ffn_hidden_size);
  m.moe.shared_expert_ffn_hidden_size = positive_or(a, "--moe-shared-expert-intermediate-size", 0);
  m.moe.shared_expert_gate = a.has("--moe-shared-expert-gate");
  m.moe.router_expert_bias = a.has("--moe-router-enable-expert-bias");
  moe_layers(a, m);
}

// The argument a model JSON key comes from, for validate_model's messages.
std::string argument_of(std::string_view key) {
  static const std::map<std::string_view, const char*> args = {
      {"hidden_size", "--hidden-size"},
      {"num_layers", "--num-layers"},
      {"num_attention_heads", "--num-attention-heads"},
      {"num_kv_heads", "--num-query-groups"},
      {"head_dim", "--kv-channels"},
      {"ffn_hidden_size", "--ffn-hidden-size"},
      {"vocab_size", "--vocab-size"},
      {"max_position_embeddings", "--max-position-embeddings"},
      {"moe.num_experts", "--num-experts"},
      {"moe.experts_per_token", "--moe-router-topk"},
      {"moe.expert_ffn_hidden_size", "--moe-ffn-hidden-size"},
      {"moe.shared_expert_ffn_hidden_size", "--moe-shared-expert-intermediate-size"},
      {"moe.shared_expert_gate", "--moe-shared-expert-gate"},
      {"moe.first_dense_layers", "--moe-layer-freq"},
      {"moe.layer_interval", "--moe-layer-freq"},
      {"mla.q_lora_rank", "--q-lora-rank"},
      {"mla.kv_lora_rank", "--kv-lora-rank"},
      {"mla.qk_nope_head_dim", "--qk-head-dim"},
      {"mla.qk_rope_head_dim", "--qk-pos-emb-head-dim"},
      {"mla.v_head_dim", "--v-head-dim"}};
  const auto it = args.find(key);
  return it != args.end() ? it->second : "(the model's " + std::string(key) + ")";
}

}  // namespace

Model megatron_model(const MegatronArgs& a, const std::string& name,
                     std::optional<std::int64_t> vocab_size) {
  Model m;
  m.name = name;
  m.source = a.where + " (Megatron-LM's shape arguments)";
  m.num_layers = required(a, "--num-layers");
  m.hidden_size = required(a, "--hidden-size");
  m.num_attention_heads = required(a, "--num-attention-heads");
  attention(a, m);
  mlp(a, m);
  m.vocab_size = vocab_size ? *vocab_size : tokenizer_vocab(a);
  m.tied_embeddings = !a.has("--untie-embeddings-and-output-weights");
  position_embedding(a, m);
  if (a.has("--normalization")) {
    const std::string& norm = a.one("--normalization");
    if (norm != "LayerNorm" && norm != "RMSNorm") {
      a.fail("--normalization", "'" + norm + "' is not modelled (LayerNorm and RMSNorm are)");
    }
    m.norm = norm == "RMSNorm" ? NormKind::kRMSNorm : NormKind::kLayerNorm;
  } else {
    m.norm = NormKind::kLayerNorm;
  }
  // Biases on every linear layer unless --disable-bias-linear; --add-qkv-bias keeps the QKV's.
  const bool bias = !a.has("--disable-bias-linear");
  m.attention_output_bias = m.mlp_bias = bias;
  m.qkv_bias = bias || a.has("--add-qkv-bias");
  experts(a, m);
  validate_model(m, [&a](std::string_view key) { return a.where + " " + argument_of(key); });
  return m;
}

}  // namespace trainsim
