#include "sim/plan/recompute_modules.hpp"

#include "sim/core/name_set.hpp"

namespace trainsim {

namespace {

constexpr NameTable<RecomputeModule, 7> kNames = {{
    {"core_attn", kRecomputeCoreAttn},
    {"layernorm", kRecomputeLayernorm},
    {"mla_up_proj", kRecomputeMlaUpProj},
    {"mlp", kRecomputeMlp},
    {"moe", kRecomputeMoe},
    {"moe_act", kRecomputeMoeAct},
    {"shared_experts", kRecomputeSharedExperts},
}};

}  // namespace

std::optional<std::uint32_t> parse_recompute_modules(std::string_view text) {
  return parse_name_set(text, kNames);
}

std::string recompute_modules_text(std::uint32_t modules) {
  return name_set_text(modules, kNames);
}

std::string recompute_module_names() {
  return name_set_text(~0u, kNames, ", ");
}

}  // namespace trainsim
