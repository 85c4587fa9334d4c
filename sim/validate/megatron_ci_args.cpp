#include "sim/validate/megatron_ci_args.hpp"

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/validate/reference_fields.hpp"

namespace trainsim {

namespace {

using Setter = std::function<void(CiLaunchArgs&, const Fields&, const char*)>;

// A dropout argument's probability, in [0, 1).
double dropout_probability(const Fields& args, const char* key) {
  const auto p = args.number(key);
  if (!p || *p < 0 || *p >= 1) args.fail(key, "must be a probability in [0, 1)");
  return *p;
}

// A string argument that must be one of `values`.
std::string one_of(const Fields& args, const char* key, std::initializer_list<const char*> values) {
  const std::string v = *args.string(key);
  std::string known;
  for (const char* x : values) {
    if (v == x) return v;
    known += std::string(known.empty() ? "" : ", ") + x;
  }
  args.fail(key, "\"" + v + "\" is not one of " + known);
}

// Setters of one field from the argument's value, by its type.
Setter flag_into(bool CiLaunchArgs::*field) {
  return [field](CiLaunchArgs& a, const Fields& f, const char* k) { a.*field = f.flag(k); };
}
Setter integer_into(std::int64_t CiLaunchArgs::*field) {
  return [field](CiLaunchArgs& a, const Fields& f, const char* k) { a.*field = *f.integer(k); };
}
// A width: a positive integer (Megatron-LM's None is the argument left out).
Setter width_into(std::int64_t CiLaunchArgs::*field) {
  return [field](CiLaunchArgs& a, const Fields& f, const char* k) {
    const auto v = f.integer(k);
    if (!v || *v <= 0) f.fail(k, "must be a positive integer");
    a.*field = *v;
  };
}
// A count: a non-negative integer.
Setter count_into(std::int64_t CiLaunchArgs::*field) {
  return [field](CiLaunchArgs& a, const Fields& f, const char* k) {
    const auto v = f.integer(k);
    if (!v || *v < 0) f.fail(k, "must be a non-negative integer");
    a.*field = *v;
  };
}
Setter probability_into(double CiLaunchArgs::*field) {
  return [field](CiLaunchArgs& a, const Fields& f, const char* k) {
    a.*field = dropout_probability(f, k);
  };
}
Setter string_into(std::string CiLaunchArgs::*field) {
  return [field](CiLaunchArgs& a, const Fields& f, const char* k) { a.*field = *f.string(k); };
}

// The arguments trainsim models, each with what it sets.
const std::map<std::string, Setter>& modelled() {
  static const std::map<std::string, Setter> setters = {
      {"--attention-backend", string_into(&CiLaunchArgs::attention_backend)},
      {"--position-embedding-type", string_into(&CiLaunchArgs::position_embedding)},
      {"--normalization",
       [](auto& a, const auto& f, auto k) {
         a.normalization = one_of(f, k, {"LayerNorm", "RMSNorm"});
       }},
      {"--disable-bias-linear", flag_into(&CiLaunchArgs::disable_bias_linear)},
      {"--hidden-dropout", probability_into(&CiLaunchArgs::hidden_dropout)},
      {"--attention-dropout", probability_into(&CiLaunchArgs::attention_dropout)},
      {"--decoder-first-pipeline-num-layers", integer_into(&CiLaunchArgs::decoder_first)},
      {"--decoder-last-pipeline-num-layers", integer_into(&CiLaunchArgs::decoder_last)},
      {"--account-for-embedding-in-pipeline-split",
       flag_into(&CiLaunchArgs::account_for_embedding)},
      {"--account-for-loss-in-pipeline-split", flag_into(&CiLaunchArgs::account_for_loss)},
      {"--defer-embedding-wgrad-compute", flag_into(&CiLaunchArgs::defer_embedding_wgrad)},
      {"--wgrad-deferral-limit", count_into(&CiLaunchArgs::wgrad_deferral_limit)},
      {"--num-virtual-stages-per-pipeline-rank", integer_into(&CiLaunchArgs::virtual_stages)},
      {"--microbatch-group-size-per-virtual-pipeline-stage",
       integer_into(&CiLaunchArgs::microbatch_group)},
      {"--use-tp-pp-dp-mapping", flag_into(&CiLaunchArgs::tp_pp_dp_mapping)},
      {"--moe-token-dispatcher-type",
       [](auto& a, const auto& f, auto k) {
         a.moe_dispatcher = one_of(f, k, {"allgather", "alltoall", "flex"});
         if (a.moe_dispatcher == "flex" && !a.unmodelled) {
           a.unmodelled = "the flex token dispatcher (DeepEP, HybridEP) not modelled";
         }
       }},
      {"--moe-grouped-gemm", flag_into(&CiLaunchArgs::moe_grouped_gemm)},
      {"--moe-shared-expert-intermediate-size",
       integer_into(&CiLaunchArgs::shared_expert_ffn_hidden_size)},
      {"--overlap-moe-expert-parallel-comm", flag_into(&CiLaunchArgs::moe_a2a_overlap)},
      {"--cross-entropy-loss-fusion", flag_into(&CiLaunchArgs::cross_entropy_loss_fusion)},
      {"--cross-entropy-fusion-impl",
       [](auto& a, const auto& f, auto k) {
         a.cross_entropy_fusion_impl = one_of(f, k, {"native", "te"});
       }},
      {"--qk-layernorm", flag_into(&CiLaunchArgs::qk_layernorm)},
      {"--multi-latent-attention", flag_into(&CiLaunchArgs::multi_latent_attention)},
      {"--q-lora-rank", width_into(&CiLaunchArgs::q_lora_rank)},
      {"--kv-lora-rank", width_into(&CiLaunchArgs::kv_lora_rank)},
      {"--qk-head-dim", width_into(&CiLaunchArgs::qk_head_dim)},
      {"--qk-pos-emb-head-dim", width_into(&CiLaunchArgs::qk_pos_emb_head_dim)},
      {"--v-head-dim", width_into(&CiLaunchArgs::v_head_dim)},
      {"--fp8-recipe", string_into(&CiLaunchArgs::fp8_recipe)},
      {"--fp8-param-gather", flag_into(&CiLaunchArgs::fp8_param_gather)},
      {"--num-distributed-optimizer-instances", width_into(&CiLaunchArgs::optimizer_instances)}};
  return setters;
}

// Arguments that change no tensor trainsim counts (scaling, fusion choices, data pipeline, load
// balancing losses). --no-bias-gelu-fusion: the unfused bias-add and GeLU keep one input of the
// same size as the fused kernel's. --moe-router-dtype: the router's tokens x experts scores in
// fp32, kilobytes.
const std::vector<std::string>& no_memory_effect() {
  static const std::vector<std::string> keys = {"--rotary-interleaved",
                                                "--no-rope-fusion",
                                                "--fim-data",
                                                "--ddp-average-in-collective",
                                                "--no-create-attention-mask-in-dataloader",
                                                "--apply-query-key-layer-scaling",
                                                "--overlap-p2p-communication-warmup-flush",
                                                "--overlap-param-gather-with-optimizer-step",
                                                "--calculate-per-token-loss",
                                                "--decoupled-lr",
                                                "--check-weight-hash-across-dp-replicas-interval",
                                                "--disable-gloo-process-groups",
                                                "--no-bias-gelu-fusion",
                                                "--moe-router-load-balancing-type",
                                                "--moe-aux-loss-coeff",
                                                "--moe-router-dtype",
                                                "--no-use-layer-wise-param-layout"};
  return keys;
}

// Arguments whose memory trainsim does not model: the row is skipped with the reason.
const std::map<std::string, std::string>& unmodelled() {
  static const std::map<std::string, std::string> reasons = {
      {"--use-transformer-engine-op-fuser",
       "Transformer Engine's operation fuser (its fused MLP's saved tensors) not modelled"}};
  return reasons;
}

void apply_launch_arg(CiLaunchArgs& a, const Fields& args, const std::string& key) {
  const char* k = key.c_str();
  if (!args.has(k)) args.fail(k, "must have a value");
  if (auto set = modelled().find(key); set != modelled().end()) {
    set->second(a, args, k);
  } else if (auto why = unmodelled().find(key); why != unmodelled().end()) {
    if (!a.unmodelled) a.unmodelled = why->second;
  } else if (key == "--optimizer") {
    const std::string optimizer = *args.string(k);
    if (optimizer != "adam" && !a.unmodelled) {
      a.unmodelled = "the " + optimizer + " optimizer (its state) not modelled (Adam only)";
    }
  } else if (std::find(no_memory_effect().begin(), no_memory_effect().end(), key) ==
             no_memory_effect().end()) {
    args.fail(k, "unknown launch argument (trainsim neither models nor ignores it)");
  }
}

}  // namespace

CiLaunchArgs read_ci_launch_args(const nlohmann::json* supplement, const std::string& file,
                                 const std::string& test_case) {
  CiLaunchArgs a;
  if (supplement == nullptr || !supplement->contains("rows")) return a;
  const auto& rows = supplement->at("rows");
  if (!rows.is_object()) fail_input(file + ": $.rows", "must be an object keyed by test case");
  if (!rows.contains(test_case)) return a;
  const std::string path = "$.rows." + test_case;
  const auto& entry = rows.at(test_case);
  if (!entry.is_object()) fail_input(file + ": " + path, "must be an object");
  a.present = true;
  const Fields f(entry, file, path);
  a.vocab_size = f.integer("vocab_size");
  if (!entry.contains("args") || !entry.at("args").is_object()) {
    fail_input(file + ": " + path + ".args", "must be an object of launch arguments");
  }
  const Fields args(entry.at("args"), file, path + ".args");
  for (const auto& [key, value] : entry.at("args").items()) apply_launch_arg(a, args, key);
  // The implementation matters only where the fusion is on (Megatron-LM reads it then only).
  if (a.cross_entropy_loss_fusion && a.cross_entropy_fusion_impl == "te" && !a.unmodelled) {
    a.unmodelled = "Transformer Engine's fused cross-entropy (its buffers) not modelled";
  }
  return a;
}

}  // namespace trainsim
