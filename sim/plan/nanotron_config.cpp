#include "sim/plan/nanotron_config.hpp"

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim {

namespace {

// Bound of dp, the micro-batch and the accumulation, so that the global batch (their product)
// stays within 64 bits.
constexpr IntRange kBatchFactor{1, std::int64_t{1} << 20};

// Whether `key` holds a value (nanotron writes null for what it leaves to its defaults).
bool given(JsonObject& o, std::string_view key) {
  return o.has(key) && !o.raw(key).is_null();
}

struct Reader {
  NanotronPlan& out;

  void set(const JsonObject& o, std::string_view key, const std::string& field,
           const std::string& value) {
    out.fields[field] = value;
    out.origin[field] = o.where(key);
  }
};

void parallelism(JsonObject p, Reader& r, std::int64_t& dp, bool experts) {
  dp = p.integer("dp", kBatchFactor);
  r.set(p, "dp", "dp", std::to_string(dp));
  const std::int64_t tp = p.integer("tp", {1});
  r.set(p, "tp", "tp", std::to_string(tp));
  r.set(p, "pp", "pp", std::to_string(p.integer("pp", {1})));
  if (given(p, "context_parallel_size")) {
    r.set(p, "context_parallel_size", "cp",
          std::to_string(p.integer("context_parallel_size", {1})));
  }
  if (given(p, "expert_parallel_size") && p.integer("expert_parallel_size", {1}) > 1) {
    // ParallelContext asserts tp x cp x dp x pp = the world and then lays the ranks out as
    // ep x pp x dp x cp x tp, which fails for ep above 1; its MoE layer keeps every expert on
    // every GPU and sends no token.
    p.fail("expert_parallel_size",
           "above 1 cannot start in nanotron (its ParallelContext lays the world's ranks out as "
           "ep x pp x dp x cp x tp after asserting tp x cp x dp x pp is the world size): use 1");
  }
  if (given(p, "pp_engine")) {
    const std::string engine = p.choice("pp_engine", {"1f1b", "afab"});
    r.set(p, "pp_engine", "schedule", engine == "afab" ? "gpipe" : "1f1b");
  }
  const std::string mode = given(p, "tp_mode")
                               ? p.choice("tp_mode", {"REDUCE_SCATTER", "ALL_REDUCE"})
                               : "ALL_REDUCE";  // ParallelismArgs' default
  if (given(p, "tp_mode")) r.set(p, "tp_mode", "sp", mode == "REDUCE_SCATTER" ? "true" : "false");
  if (experts && tp > 1) {
    // Qwen2MoELayer's experts are whole on every TP rank, each rank routing its own tokens.
    r.set(p, "tp", "etp", "1");
  }
  if (experts && mode == "ALL_REDUCE" && tp > 1) {
    // Every TP rank holds all the tokens and every expert: each routes and computes them all.
    p.fail(given(p, "tp_mode") ? "tp_mode" : "tp",
           "ALL_REDUCE with tp above 1 runs a mixture-of-experts layer's every token through the "
           "experts on each TP rank, which is not modelled: use tp_mode REDUCE_SCATTER");
  }
  if (given(p, "recompute_layer") && p.boolean("recompute_layer")) {
    r.set(p, "recompute_layer", "recompute", "full");
    if (experts) {
      r.out.notes.push_back(p.where("recompute_layer") +
                            ": the MoE layers checkpoint themselves inside the checkpointed "
                            "layer, a third forward of the experts that is not priced");
    }
  }
}

void tokens(JsonObject t, Reader& r, std::int64_t dp) {
  r.set(t, "sequence_length", "seq_len", std::to_string(t.integer("sequence_length", {1})));
  const std::int64_t mbs = t.integer("micro_batch_size", kBatchFactor);
  r.set(t, "micro_batch_size", "mbs", std::to_string(mbs));
  const std::int64_t accumulation = given(t, "batch_accumulation_per_replica")
                                        ? t.integer("batch_accumulation_per_replica", kBatchFactor)
                                        : 1;
  // The global batch in sequences: every data-parallel replica's micro-batches.
  r.set(t, "batch_accumulation_per_replica", "gbs", std::to_string(mbs * accumulation * dp));
}

void model_section(JsonObject m, Reader& r) {
  if (given(m, "dtype")) {
    const std::string dtype = m.string("dtype");
    if (dtype != "bfloat16") {
      m.fail("dtype", "is " + dtype + ": trainsim prices BF16 training (and FP8 by --precision)");
    }
    r.set(m, "dtype", "precision", "bf16");
  }
  if (given(m, "make_vocab_size_divisible_by")) {
    r.set(m, "make_vocab_size_divisible_by", "vocab_divisible_by",
          std::to_string(m.integer("make_vocab_size_divisible_by", {1, std::int64_t{1} << 20})));
  }
}

// Whether the model_config holds a mixture of experts (moe_config given).
bool has_experts(const nlohmann::json& config) {
  const auto& model = config.contains("model") ? config.at("model") : nlohmann::json();
  if (!model.is_object() || !model.contains("model_config")) return false;
  const auto& c = model.at("model_config");
  return c.is_object() && c.contains("moe_config") && !c.at("moe_config").is_null();
}

// moe_config.layers: the MoE layers' indices, or [-1] (its default) for every layer.
void read_expert_layers(JsonObject& c, Model& m) {
  if (!given(c, "layers")) return;
  const nlohmann::json& layers = c.raw("layers");
  if (layers == nlohmann::json::array({-1})) return;  // every layer
  const auto moe = listed_layers(layers, m.num_layers);
  if (!moe) {
    c.fail("layers", "must be [-1] (every layer) or a list of layer indices below " +
                         std::to_string(m.num_layers));
  }
  if (!set_moe_layers(m, *moe)) c.fail("layers", "lists no layer: give [-1] for every layer");
}

// nanotron's MoEConfig (nanotron/nn/moe.py, Qwen2MoELayer): num_experts routed experts of
// moe_intermediate_size, top_k a token, a sigmoid-gated shared expert of
// shared_expert_intermediate_size where enable_shared_expert, on the layers `layers` lists (-1:
// every layer). Defaults are MoEConfig's; another key is refused, as nanotron's strict config
// loading refuses it.
void read_experts(JsonObject c, Model& m) {
  c.allow({"router_aux_loss_coef", "shared_expert_intermediate_size", "layers",
           "token_dispatcher_type"});
  if (given(c, "token_dispatcher_type"))
    (void)c.choice("token_dispatcher_type", {"alltoall", "allgather"});
  MoeSpec& e = m.moe;
  e.num_experts = c.optional_integer("num_experts", {1, 1 << 20}).value_or(8);
  e.experts_per_token = c.optional_integer("top_k", {1, 1 << 20}).value_or(2);
  if (e.experts_per_token > e.num_experts) {
    c.fail("top_k",
           "must be at most num_experts (" + std::to_string(e.num_experts) + "), as nanotron asks");
  }
  e.expert_ffn_hidden_size = c.optional_integer("moe_intermediate_size").value_or(1408);
  if (c.optional_boolean("enable_shared_expert").value_or(false)) {
    e.shared_expert_ffn_hidden_size =
        c.optional_integer("shared_expert_intermediate_size").value_or(5632);
    e.shared_expert_gate = true;
  }
  read_expert_layers(c, m);
  c.finish();
}

}  // namespace

NanotronPlan plan_from_nanotron_config(const nlohmann::json& config, const std::string& file) {
  NanotronPlan out;
  Reader r{out};
  JsonObject top(config, file);
  std::int64_t dp = 1;
  parallelism(top.object("parallelism"), r, dp, has_experts(config));
  tokens(top.object("tokens"), r, dp);
  if (auto model = top.optional_object("model")) model_section(*model, r);
  if (auto optimizer = top.optional_object("optimizer");
      optimizer && given(*optimizer, "zero_stage")) {
    r.set(*optimizer, "zero_stage", "zero",
          std::to_string(optimizer->integer("zero_stage", {0, 1})));
  }
  out.fields["partition"] = "nanotron";
  out.origin["partition"] = file + " (nanotron's partition rule)";
  return out;
}

Model model_from_nanotron_config(const nlohmann::json& config, const std::string& name,
                                 const std::string& file) {
  JsonObject top(config, file);
  JsonObject c = top.object("model").object("model_config");
  Model m;
  m.name = name;
  m.source = file + " (nanotron's model_config)";
  m.num_layers = c.integer("num_hidden_layers", {1});
  m.hidden_size = c.integer("hidden_size", {1});
  m.num_attention_heads = c.integer("num_attention_heads", {1});
  m.num_kv_heads = given(c, "num_key_value_heads") ? c.integer("num_key_value_heads", {1})
                                                   : m.num_attention_heads;
  if (m.hidden_size % m.num_attention_heads != 0) {
    c.fail("num_attention_heads",
           "must divide hidden_size (" + std::to_string(m.hidden_size) + ")");
  }
  m.head_dim = m.hidden_size / m.num_attention_heads;
  m.ffn_hidden_size = c.integer("intermediate_size", {1});
  const std::string act = given(c, "hidden_act") ? c.string("hidden_act") : "silu";
  if (act != "silu" && act != "gelu" && act != "gelu_pytorch_tanh") {
    c.fail("hidden_act", "'" + act + "' is not modelled (silu and gelu are)");
  }
  m.ffn_kind = act == "silu" ? FfnKind::kSwiGLU : FfnKind::kGeGLU;
  m.vocab_size = c.integer("vocab_size", {1});
  m.tied_embeddings = given(c, "tie_word_embeddings") && c.boolean("tie_word_embeddings");
  m.position_embedding = PositionEmbedding::kRope;
  m.max_position_embeddings =
      given(c, "max_position_embeddings") ? c.integer("max_position_embeddings", {1}) : 0;
  m.norm = NormKind::kRMSNorm;
  m.qkv_bias = given(c, "attention_bias") && c.boolean("attention_bias");
  if (given(c, "moe_config")) read_experts(c.object("moe_config"), m);
  validate_model(m, [&c](std::string_view key) {
    const std::string k(key);
    return c.where(k == "num_layers"        ? "num_hidden_layers"
                   : k == "num_kv_heads"    ? "num_key_value_heads"
                   : k == "ffn_hidden_size" ? "intermediate_size"
                                            : k);
  });
  return m;
}

}  // namespace trainsim
