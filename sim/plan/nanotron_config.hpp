#pragma once
// A nanotron training config (the YAML its run_train.py takes, read by sim/core/yaml_subset):
// the plan its parallelism, tokens, optimizer and model sections set, and the model its
// model_config describes (nanotron's LlamaConfig and Qwen2Config, which use Hugging Face's
// names), so that the config a nanotron user launches is the plan trainsim checks: nanotron's own
// partition rule (get_block_compute_costs) and vocabulary multiple included.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/model/model.hpp"

namespace trainsim {

struct NanotronPlan {
  std::map<std::string, std::string> fields;  // plan field -> value as its flag takes it
  std::map<std::string, std::string> origin;  // plan field -> the key that set it
  std::vector<std::string> notes;             // what was read but is not priced
};

/// The plan fields the config sets: dp, tp, pp, cp and ep from "parallelism" (its pp_engine as
/// the schedule: 1f1b, or afab as GPipe; tp_mode REDUCE_SCATTER as sequence parallelism;
/// recompute_layer as full recomputation), seq_len, mbs and gbs (mbs x
/// batch_accumulation_per_replica x dp) from "tokens", zero from "optimizer.zero_stage", the
/// precision from "model.dtype", the vocabulary multiple, and nanotron's partition rule.
/// InputError naming `file` and the key for a missing or unreadable one, or what trainsim cannot
/// price or nanotron cannot run (FP16 or FP32 training, another pipeline engine,
/// expert_parallel_size above 1, a mixture of experts under tp_mode ALL_REDUCE).
NanotronPlan plan_from_nanotron_config(const nlohmann::json& config, const std::string& file);

/// The model "model.model_config" describes, named `name`: a gated MLP of its hidden_act (silu:
/// SwiGLU, gelu: GeGLU), RoPE, RMSNorm, query/key/value biases where attention_bias is set, and
/// the mixture of experts its moe_config sets (Qwen2MoELayer: routed experts, top-k, a gated shared
/// expert, the MoE layers). InputError naming `file` and the key for a missing or invalid shape.
Model model_from_nanotron_config(const nlohmann::json& config, const std::string& name,
                                 const std::string& file);

}  // namespace trainsim
