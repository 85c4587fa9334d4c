// The Megatron-LM arguments trainsim reads: those that copy to one plan field, those a rule reads
// with others (sim/plan/megatron_arg_rules.cpp), and the model's shape, checked.
#include <charconv>

#include "sim/core/error.hpp"
#include "sim/plan/megatron_arg_table.hpp"

namespace trainsim {

namespace {

struct MegatronArg {
  const char* name;
  Arity arity;
  const char* field;  // the plan field it copies to; "" where a rule reads it
};

constexpr MegatronArg kArgs[] = {
    // Copied to one field each.
    {"--tensor-model-parallel-size", Arity::kOne, "tp"},
    {"--pipeline-model-parallel-size", Arity::kOne, "pp"},
    {"--context-parallel-size", Arity::kOne, "cp"},
    {"--expert-model-parallel-size", Arity::kOne, "ep"},
    {"--expert-tensor-parallel-size", Arity::kOne, "etp"},
    {"--micro-batch-size", Arity::kOne, "mbs"},
    {"--global-batch-size", Arity::kOne, "gbs"},
    {"--seq-length", Arity::kOne, "seq_len"},
    {"--decoder-first-pipeline-num-layers", Arity::kOne, "decoder_first_pipeline_num_layers"},
    {"--decoder-last-pipeline-num-layers", Arity::kOne, "decoder_last_pipeline_num_layers"},
    {"--pipeline-model-parallel-layout", Arity::kOne, "partition"},
    {"--microbatch-group-size-per-virtual-pipeline-stage", Arity::kOne,
     "microbatch_group_size_per_vp_stage"},
    {"--num-distributed-optimizer-instances", Arity::kOne, "num_distributed_optimizer_instances"},
    {"--wgrad-deferral-limit", Arity::kOne, "wgrad_deferral_limit"},
    {"--attention-dropout", Arity::kOne, "attention_dropout"},
    {"--hidden-dropout", Arity::kOne, "hidden_dropout"},
    {"--make-vocab-size-divisible-by", Arity::kOne, "vocab_divisible_by"},
    {"--moe-expert-capacity-factor", Arity::kOne, "moe_capacity_factor"},
    {"--mtp-num-layers", Arity::kOne, "mtp_num_layers"},
    {"--sequence-parallel", Arity::kSwitch, "sp"},
    {"--overlap-grad-reduce", Arity::kSwitch, "overlap_grad_reduce"},
    {"--overlap-param-gather", Arity::kSwitch, "overlap_param_gather"},
    {"--tp-comm-overlap", Arity::kSwitch, "tp_comm_overlap"},
    {"--moe-grouped-gemm", Arity::kSwitch, "moe_grouped_gemm"},
    {"--overlap-moe-expert-parallel-comm", Arity::kSwitch, "overlap_moe_expert_parallel_comm"},
    {"--account-for-embedding-in-pipeline-split", Arity::kSwitch,
     "account_for_embedding_in_pipeline_split"},
    {"--account-for-loss-in-pipeline-split", Arity::kSwitch, "account_for_loss_in_pipeline_split"},
    {"--defer-embedding-wgrad-compute", Arity::kSwitch, "defer_embedding_wgrad_compute"},
    {"--grad-reduce-in-bf16", Arity::kSwitch, "grad_reduce_in_bf16"},
    {"--fp8-param-gather", Arity::kSwitch, "fp8_param_gather"},
    {"--cross-entropy-loss-fusion", Arity::kSwitch, "cross_entropy_loss_fusion"},
    // Read by a rule.
    {"--virtual-pipeline-model-parallel-size", Arity::kOne, ""},
    {"--num-virtual-stages-per-pipeline-rank", Arity::kOne, ""},
    {"--num-layers-per-virtual-pipeline-stage", Arity::kOne, ""},
    {"--no-overlap-p2p-communication", Arity::kSwitch, ""},
    {"--use-tp-pp-dp-mapping", Arity::kSwitch, ""},
    {"--bf16", Arity::kSwitch, ""},
    {"--fp16", Arity::kSwitch, ""},
    {"--fp8-format", Arity::kOne, ""},
    {"--fp8-recipe", Arity::kOne, ""},
    {"--fp4-format", Arity::kOne, ""},
    {"--fp4-recipe", Arity::kOne, ""},
    {"--fp4-param-gather", Arity::kSwitch, ""},
    {"--recompute-activations", Arity::kSwitch, ""},
    {"--recompute-granularity", Arity::kOne, ""},
    {"--recompute-method", Arity::kOne, ""},
    {"--recompute-num-layers", Arity::kOne, ""},
    {"--recompute-modules", Arity::kList, ""},
    {"--use-distributed-optimizer", Arity::kSwitch, ""},
    {"--use-precision-aware-optimizer", Arity::kSwitch, ""},
    {"--exp-avg-dtype", Arity::kOne, ""},
    {"--exp-avg-sq-dtype", Arity::kOne, ""},
    {"--main-params-dtype", Arity::kOne, ""},
    {"--main-grads-dtype", Arity::kOne, ""},
    {"--attention-backend", Arity::kOne, ""},
    {"--cp-comm-type", Arity::kList, ""},
    {"--hierarchical-context-parallel-sizes", Arity::kList, ""},
    {"--cross-entropy-fusion-impl", Arity::kOne, ""},
    {"--moe-token-dispatcher-type", Arity::kOne, ""},
    // The model's shape: built from them without --model, else checked against it.
    {"--num-layers", Arity::kOne, ""},
    {"--hidden-size", Arity::kOne, ""},
    {"--ffn-hidden-size", Arity::kOne, ""},
    {"--num-attention-heads", Arity::kOne, ""},
    {"--group-query-attention", Arity::kSwitch, ""},
    {"--num-query-groups", Arity::kOne, ""},
    {"--kv-channels", Arity::kOne, ""},
    {"--num-experts", Arity::kOne, ""},
    {"--moe-router-topk", Arity::kOne, ""},
    {"--moe-ffn-hidden-size", Arity::kOne, ""},
    {"--swiglu", Arity::kSwitch, ""},
    {"--squared-relu", Arity::kSwitch, ""},
    {"--untie-embeddings-and-output-weights", Arity::kSwitch, ""},
    {"--position-embedding-type", Arity::kOne, ""},
    {"--use-rotary-position-embeddings", Arity::kSwitch, ""},
    {"--max-position-embeddings", Arity::kOne, ""},
    {"--normalization", Arity::kOne, ""},
    {"--disable-bias-linear", Arity::kSwitch, ""},
    {"--add-qkv-bias", Arity::kSwitch, ""},
    {"--qk-layernorm", Arity::kSwitch, ""},
    {"--tokenizer-type", Arity::kOne, ""},
    {"--vocab-size", Arity::kOne, ""},
    {"--multi-latent-attention", Arity::kSwitch, ""},
    {"--q-lora-rank", Arity::kOne, ""},
    {"--kv-lora-rank", Arity::kOne, ""},
    {"--qk-head-dim", Arity::kOne, ""},
    {"--qk-pos-emb-head-dim", Arity::kOne, ""},
    {"--v-head-dim", Arity::kOne, ""},
    {"--moe-shared-expert-intermediate-size", Arity::kOne, ""},
    {"--moe-shared-expert-gate", Arity::kSwitch, ""},
    {"--moe-router-enable-expert-bias", Arity::kSwitch, ""},
    {"--moe-layer-freq", Arity::kOne, ""},
};

// Megatron-LM's own arguments within a typo of one trainsim reads: not read, and no misspelling.
constexpr const char* kNearButReal[] = {"--vocab-file"};

const MegatronArg* find_arg(const std::string& name) {
  for (const auto& a : kArgs) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

// The launch's switches and choices of the model's kind, each against the model given.
void check_kinds(const MegatronArgs& a, const Model& model) {
  auto differs = [&](const std::string& arg, const std::string& has) {
    a.fail(arg, "is given, but " + model.name + " has " + has +
                    ": the arguments describe another model than the one given");
  };
  const std::string mlp = std::string("a ") + to_string(model.ffn_kind) + " MLP";
  if (a.has("--swiglu") && model.ffn_kind != FfnKind::kSwiGLU) differs("--swiglu", mlp);
  if (a.has("--squared-relu") && model.ffn_kind != FfnKind::kSquaredRelu) {
    differs("--squared-relu", mlp);
  }
  if (a.has("--untie-embeddings-and-output-weights") && model.tied_embeddings) {
    differs("--untie-embeddings-and-output-weights", "tied embeddings");
  }
  if (a.has("--normalization") &&
      (a.one("--normalization") == "RMSNorm") != (model.norm == NormKind::kRMSNorm)) {
    differs("--normalization", to_string(model.norm));
  }
  if (const auto position = megatron_position_embedding(a);
      position && *position != model.position_embedding) {
    differs(a.has("--use-rotary-position-embeddings") ? "--use-rotary-position-embeddings"
                                                      : "--position-embedding-type",
            std::string(to_string(model.position_embedding)) + " position embeddings");
  }
  if (a.has("--disable-bias-linear") && (model.mlp_bias || model.attention_output_bias)) {
    differs("--disable-bias-linear", "biases on its linear layers");
  }
  if (a.has("--multi-latent-attention") && !model.mla.is_mla()) {
    differs("--multi-latent-attention", "no multi-latent attention");
  }
  if (a.has("--qk-layernorm") && !model.qk_norm && !model.mla.is_mla()) {
    differs("--qk-layernorm", "no query and key norms");
  }
}

}  // namespace

std::optional<PositionEmbedding> megatron_position_embedding(const MegatronArgs& a) {
  if (a.has("--use-rotary-position-embeddings")) return PositionEmbedding::kRope;
  if (!a.has("--position-embedding-type")) return std::nullopt;
  const std::string& type = a.one("--position-embedding-type");
  if (type == "rope" || type == "yarn") return PositionEmbedding::kRope;
  if (type == "learned_absolute") return PositionEmbedding::kLearned;
  if (type == "none") return PositionEmbedding::kNone;
  a.fail("--position-embedding-type",
         "'" + type + "' is not modelled (learned_absolute, rope, yarn and none are)");
}

std::optional<Arity> megatron_arity(const std::string& name) {
  const MegatronArg* a = find_arg(name);
  return a ? std::optional<Arity>(a->arity) : std::nullopt;
}

bool megatron_near_but_real(const std::string& name) {
  for (const char* real : kNearButReal) {
    if (name == real) return true;
  }
  return false;
}

const std::vector<std::string>& megatron_arg_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& a : kArgs) n.emplace_back(a.name);
    return n;
  }();
  return names;
}

std::int64_t MegatronArgs::integer(const std::string& arg) const {
  const std::string& text = one(arg);
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    fail(arg, "must be an integer, got '" + text + "'");
  }
  return v;
}

void MegatronArgs::fail(const std::string& arg, const std::string& what) const {
  fail_input(where + " " + arg, what);
}

void MegatronReader::set(const std::string& field, const std::string& value,
                         const std::string& arg) {
  out.fields[field] = value;
  out.origin[field] = where + " " + arg;
}

void MegatronReader::by_default(const std::string& field, const std::string& value) {
  if (out.fields.contains(field)) return;
  out.fields[field] = value;
  out.origin[field] = where + " (Megatron-LM's default " + field + " " + value + ")";
  out.defaults.push_back(field + " " + value);
}

void MegatronReader::direct_fields() {
  for (const auto& a : kArgs) {
    if (*a.field == '\0' || !has(a.name)) continue;
    set(a.field, a.arity == Arity::kSwitch ? "true" : one(a.name), a.name);
  }
}

void MegatronReader::check_shapes() const {
  const auto& moe = model.moe;
  const std::pair<const char*, std::int64_t> shapes[] = {
      {"--num-layers", model.num_layers},
      {"--hidden-size", model.hidden_size},
      {"--ffn-hidden-size", model.ffn_hidden_size},
      {"--num-attention-heads", model.num_attention_heads},
      {"--kv-channels", model.head_dim},
      {"--num-experts", moe.num_experts},
      {"--moe-router-topk", moe.experts_per_token},
      {"--moe-ffn-hidden-size", moe.expert_ffn_hidden_size},
  };
  check_kinds(*this, model);
  for (const auto& [arg, value] : shapes) {
    if (has(arg) && integer(arg) != value) {
      fail(arg, "is " + one(arg) + ", but " + model.name + " has " + std::to_string(value) +
                    ": the arguments describe another model than the one given");
    }
  }
  if (model.mla.is_mla() || !has("--num-attention-heads")) return;
  // Megatron-LM builds as many KV heads as query heads unless --group-query-attention.
  const std::int64_t kv = has("--group-query-attention")
                              ? (has("--num-query-groups") ? integer("--num-query-groups") : 1)
                              : model.num_attention_heads;
  if (kv != model.num_kv_heads) {
    fail(has("--group-query-attention") ? "--num-query-groups" : "--num-attention-heads",
         "Megatron-LM builds " + std::to_string(kv) +
             " key-value heads from these arguments, but " + model.name + " has " +
             std::to_string(model.num_kv_heads) +
             (has("--group-query-attention") ? ""
                                             : ": add --group-query-attention --num-query-groups " +
                                                   std::to_string(model.num_kv_heads)));
  }
}

}  // namespace trainsim
