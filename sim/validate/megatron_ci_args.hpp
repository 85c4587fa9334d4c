#pragma once
// The launch arguments of a Megatron-LM CI run that its golden row leaves out
// (megatron_lm_ci_model_args_h100.json, beside the golden values): what each one sets in
// trainsim's model and plan, that it changes no tensor trainsim counts, or that trainsim does not
// model it. An argument in none of these classes is an input error, so that a new argument is
// looked at before a row is predicted with it.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace trainsim {

/// Megatron-LM's default dropout (--attention-dropout and --hidden-dropout, 0.1 each), what a
/// launch that leaves them out trains with.
inline constexpr double kMegatronDefaultDropout = 0.1;

struct CiLaunchArgs {
  bool present = false;  // the supplement has the row
  std::optional<std::int64_t> vocab_size;
  std::string attention_backend = "auto";
  std::string position_embedding = "learned_absolute";
  std::string normalization = "LayerNorm";
  bool disable_bias_linear = false;
  double hidden_dropout = kMegatronDefaultDropout;
  double attention_dropout = kMegatronDefaultDropout;
  std::int64_t decoder_first = -1;
  std::int64_t decoder_last = -1;
  bool account_for_embedding = false;
  bool account_for_loss = false;
  bool defer_embedding_wgrad = false;  // --defer-embedding-wgrad-compute
  std::int64_t wgrad_deferral_limit = 0;
  std::int64_t virtual_stages = 1;
  std::int64_t microbatch_group = 0;  // interleaved: micro-batches per chunk group (0: pp)
  bool tp_pp_dp_mapping = false;      // --use-tp-pp-dp-mapping: ranks ordered tp-cp-ep-pp-dp
  // Mixture of experts (Megatron-Core's defaults where the config is silent).
  std::string moe_dispatcher = "allgather";
  bool moe_grouped_gemm = false;
  std::int64_t shared_expert_ffn_hidden_size = 0;
  bool moe_a2a_overlap = false;
  bool cross_entropy_loss_fusion = false;            // Megatron-Core's fused cross-entropy
  std::string cross_entropy_fusion_impl = "native";  // which one, when fused
  bool qk_layernorm = false;                         // a norm on each head's query and key
  // Multi-latent attention, with Megatron-LM's defaults (--q-lora-rank None: plain queries).
  bool multi_latent_attention = false;
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 32;
  std::int64_t qk_head_dim = 128;
  std::int64_t qk_pos_emb_head_dim = 64;
  std::int64_t v_head_dim = 128;
  // FP8 (the golden row's fp8_format says whether the run is FP8).
  std::string fp8_recipe = "delayed";
  bool fp8_param_gather = false;
  std::int64_t optimizer_instances = 1;   // --num-distributed-optimizer-instances
  std::optional<std::string> unmodelled;  // an argument whose memory trainsim does not model
};

/// The supplement's arguments for `test_case` (not present when the supplement lacks the row).
/// InputError naming the file and JSON path for a malformed entry or an unknown argument.
CiLaunchArgs read_ci_launch_args(const nlohmann::json* supplement, const std::string& file,
                                 const std::string& test_case);

}  // namespace trainsim
