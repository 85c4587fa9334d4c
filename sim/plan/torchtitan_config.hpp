#pragma once
// A torchtitan training config (the TOML its train.py takes, read by sim/core/toml_subset): the
// plan its [parallelism], [training], [activation_checkpoint], [model] converters and [float8]
// tables set, and the catalog model its [model] name and flavor train, so that the config a
// torchtitan user launches is the plan trainsim checks, with torchtitan's own pipeline split.
// What trainsim cannot price as torchtitan runs it (every N-th layer checkpointed where the
// parts' counts differ, rowwise FP8, FP8 on experts, the zero-bubble schedules) is an input error
// naming the key, unless the command line sets that plan field itself.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/model/model.hpp"

namespace trainsim {

struct TorchtitanPlan {
  std::map<std::string, std::string> fields;  // plan field -> value as its flag takes it
  std::map<std::string, std::string> origin;  // plan field -> the key that set it
  std::vector<std::string> defaults;          // "field value" that torchtitan's defaults set
  std::vector<std::string> notes;             // what was read but is not priced
};

/// The plan fields of the config for `model` (its decoder layers, whether it has experts, how
/// torchtitan's flavor of it differs): data parallelism
/// (replicate x shard; shard -1 takes what --gpus leaves), tp (with sequence parallelism, as
/// torchtitan always runs it), pp with its schedule and torchtitan's split of the layers
/// (generate_llm_fqn_per_model_part, or the split points), cp and its rotate method, ep, the
/// batch (mbs: the local batch, or the pipeline's micro-batch; gbs: the global batch, or local
/// x dp), seq_len, recomputation, FP8 on dense models (the float8 converter: tensorwise scaling,
/// FP8 all-gather), ep and etp on MoE models
/// and FSDP as ZeRO: 3 without pipelining, 1 with it (torchtitan's pipelined FSDP gathers the
/// weights once a step and reduce-scatters the gradients at the last backward), HSDP's replicate
/// degree as that many instances of the sharding. `flags`: the
/// plan fields the command line sets (field -> value as typed), which the config yields to.
/// InputError naming `file` and the key for a value torchtitan refuses or trainsim cannot price.
TorchtitanPlan plan_from_torchtitan_config(const nlohmann::json& config, const std::string& file,
                                           const Model& model,
                                           const std::map<std::string, std::string>& flags);

/// The catalog model that [model] name and flavor train (llama3 8B, 70B and 405B; llama2 7B and
/// 70B; llama4 17bx128e; deepseek_v3 671B; qwen3 30B-A3B and 235B-A22B). InputError naming
/// `file` and the key for another, asking for --model.
std::string torchtitan_catalog_model(const nlohmann::json& config, const std::string& file);

}  // namespace trainsim
