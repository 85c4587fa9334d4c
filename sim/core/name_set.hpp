#pragma once
// A set of flags written as names joined by commas (Megatron-LM's --recompute-modules, LoRA's
// target modules): parsed and written back against one table of (name, flag) pairs.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace trainsim {

template <class Flag, std::size_t N>
using NameTable = std::array<std::pair<std::string_view, Flag>, N>;

/// The flags a text names ("a,b"), or nullopt when it is empty, a name is unknown or repeated, or
/// it ends in a comma.
template <class Flag, std::size_t N>
std::optional<std::uint32_t> parse_name_set(std::string_view text,
                                            const NameTable<Flag, N>& names) {
  if (text.empty()) return std::nullopt;
  std::uint32_t out = 0;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view name = text.substr(0, comma);
    bool known = false;
    for (const auto& [n, bit] : names) {
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

/// The names of the flags in `set`, in the table's order, joined by `separator`.
template <class Flag, std::size_t N>
std::string name_set_text(std::uint32_t set, const NameTable<Flag, N>& names,
                          std::string_view separator = ",") {
  std::string out;
  for (const auto& [name, bit] : names) {
    if ((set & bit) == 0) continue;
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

}  // namespace trainsim
