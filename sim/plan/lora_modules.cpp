#include "sim/plan/lora_modules.hpp"

#include "sim/core/name_set.hpp"

namespace trainsim {

namespace {

constexpr NameTable<LoraModule, 4> kNames = {{
    {"linear_qkv", kLoraQkv},
    {"linear_proj", kLoraProj},
    {"linear_fc1", kLoraFc1},
    {"linear_fc2", kLoraFc2},
}};

}  // namespace

std::optional<std::uint32_t> parse_lora_modules(std::string_view text) {
  return parse_name_set(text, kNames);
}

std::string lora_modules_text(std::uint32_t modules) {
  return name_set_text(modules, kNames);
}

std::string lora_module_names() {
  return name_set_text(~0u, kNames, ", ");
}

}  // namespace trainsim
