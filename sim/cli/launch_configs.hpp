#pragma once
// A plan (and, without --model, the model) from what another tool launches with: Megatron-LM's
// arguments (--megatron-args), nanotron's YAML config (--nanotron-config) or torchtitan's TOML
// config (--torchtitan-config). The fields it sets
// lie under the plan flags, each named by the argument or key that set it, and the standard error
// says how it was read as trainsim flags.
#include <filesystem>
#include <optional>

#include "sim/cli/scenario.hpp"

namespace trainsim {

/// --megatron-args: the plan fields of Megatron-LM's arguments; the model of `model_path`, or
/// without one the model its shape arguments build (named by the launch script's file).
Model apply_megatron_args(const InputRequest& req,
                          const std::optional<std::filesystem::path>& model_path,
                          ResolvedInputs& in);

/// --nanotron-config: the plan fields of nanotron's config; the model of `model_path`, or without
/// one the model of its model_config (named by the config's file).
Model apply_nanotron_config(const InputRequest& req,
                            const std::optional<std::filesystem::path>& model_path,
                            ResolvedInputs& in);

/// --torchtitan-config: the plan fields of torchtitan's config; the model of `model_path`, or
/// without one the catalog model its [model] name and flavor train (then `model_path`).
Model apply_torchtitan_config(const InputRequest& req,
                              std::optional<std::filesystem::path>& model_path, ResolvedInputs& in);

}  // namespace trainsim
