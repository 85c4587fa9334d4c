#pragma once
// LoRA's target modules (NeMo's LoRA target_modules, Megatron-Bridge's alike): the linear layers
// of each decoder layer that get a low-rank adapter while every base weight is frozen. A set of
// flags, written as Megatron-Core names the layers, comma-separated.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainsim {

enum LoraModule : std::uint32_t {
  kLoraQkv = 1u << 0,   // linear_qkv: the fused query, key and value projection (column-parallel)
  kLoraProj = 1u << 1,  // linear_proj: the attention output projection (row-parallel)
  kLoraFc1 = 1u << 2,   // linear_fc1: the MLP's up (and gate) projection (column-parallel)
  kLoraFc2 = 1u << 3,   // linear_fc2: the MLP's down projection (row-parallel)
};
/// NeMo's default: all four.
inline constexpr std::uint32_t kLoraAllModules = kLoraQkv | kLoraProj | kLoraFc1 | kLoraFc2;

/// The modules a text names ("linear_qkv,linear_fc1"), or nullopt when a name is unknown or
/// repeated.
std::optional<std::uint32_t> parse_lora_modules(std::string_view text);
/// The text of a set, in Megatron's order ("linear_qkv,linear_proj"); "" for none.
std::string lora_modules_text(std::uint32_t modules);
/// Every name, for messages: "linear_qkv, linear_proj, linear_fc1, linear_fc2".
std::string lora_module_names();

}  // namespace trainsim
