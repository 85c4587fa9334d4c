#include "sim/plan/recompute_modules.hpp"

#include <array>
#include <utility>

namespace trainsim {

namespace {

constexpr std::array<std::pair<std::string_view, RecomputeModule>, 7> kNames = {{
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
  if (text.empty()) return std::nullopt;
  std::uint32_t out = 0;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view name = text.substr(0, comma);
    bool known = false;
    for (const auto& [n, bit] : kNames) {
      if (n != name) continue;
      if ((out & bit) != 0) return std::nullopt;
      out |= bit;
      known = true;
    }
    if (!known) return std::nullopt;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return std::nullopt;  // a trailing comma
  }
  return out;
}

std::string recompute_modules_text(std::uint32_t modules) {
  std::string out;
  for (const auto& [name, bit] : kNames) {
    if ((modules & bit) == 0) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

std::string recompute_module_names() {
  std::string out;
  for (const auto& [name, bit] : kNames) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace trainsim
