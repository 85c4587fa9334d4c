#include "sim/plan/dims.hpp"

namespace trainsim {

const char* to_string(Dim d) {
  switch (d) {
    case Dim::kTP:
      return "tp";
    case Dim::kCP:
      return "cp";
    case Dim::kEP:
      return "ep";
    case Dim::kDP:
      return "dp";
    case Dim::kPP:
      return "pp";
    case Dim::kEDP:
      return "edp";
    case Dim::kETP:
      return "etp";
    case Dim::kStage:
      return "stage";
    case Dim::kIntraDP:
      return "intra-dp";
    case Dim::kInterDP:
      return "inter-dp";
    case Dim::kIntraEDP:
      return "intra-edp";
    case Dim::kInterEDP:
      return "inter-edp";
    case Dim::kEmbedding:
      return "embedding";
    case Dim::kCPA2A:
      return "cp-a2a";
    case Dim::kCPP2P:
      return "cp-p2p";
  }
  return "?";
}

std::string to_string(const RankOrder& order) {
  std::string s;
  for (const Dim d : order) s += (s.empty() ? "" : "-") + std::string(to_string(d));
  return s;
}

std::optional<RankOrder> parse_rank_order(std::string_view text) {
  RankOrder order{};
  std::array<bool, kNumOrderDims> seen{};
  std::size_t n = 0;
  while (true) {
    const auto dash = text.find('-');
    const auto name = text.substr(0, dash);
    std::optional<Dim> dim;
    for (std::size_t i = 0; i < kNumOrderDims; ++i) {
      if (name == to_string(static_cast<Dim>(i))) dim = static_cast<Dim>(i);
    }
    if (!dim || n == kNumOrderDims || seen[index_of(*dim)]) return std::nullopt;
    seen[index_of(*dim)] = true;
    order[n++] = *dim;
    if (dash == std::string_view::npos) break;
    text.remove_prefix(dash + 1);
  }
  if (n != kNumOrderDims) return std::nullopt;
  return order;
}

}  // namespace trainsim
