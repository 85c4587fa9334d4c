#include "sim/plan/dims.hpp"

#include <algorithm>

namespace trainsim {

namespace {

// In enum order. Expert gradients, the distributed optimizer's instances, FP8 amaxes over a
// stage (a synchronisation of the data-parallel replicas) and the embedding's gradients are
// data-parallel traffic; the experts' tensor parallelism is TP's.
constexpr std::array<DimInfo, kNumDims> kDimInfo = {{
    {"tp", "tensor", Dim::kTP},
    {"cp", "context", Dim::kCP},
    {"ep", "expert", Dim::kEP},
    {"dp", "data", Dim::kDP},
    {"pp", "pipeline", Dim::kPP},
    {"edp", "expert-data", Dim::kDP},
    {"etp", "expert-tensor", Dim::kTP},
    {"stage", "tensor-and-data", Dim::kDP},  // Megatron-Core's name for the group
    {"intra-dp", "intra-instance data", Dim::kDP},
    {"inter-dp", "inter-instance data", Dim::kDP},
    {"intra-edp", "intra-instance expert-data", Dim::kDP},
    {"inter-edp", "inter-instance expert-data", Dim::kDP},
    {"embedding", "embedding", Dim::kDP},
    {"cp-a2a", "context (a2a level)", Dim::kCP},
    {"cp-p2p", "context (p2p level)", Dim::kCP},
}};
static_assert(std::all_of(kDimInfo.begin(), kDimInfo.end(),
                          [](const DimInfo& d) { return d.name != nullptr; }),
              "one row per dimension");

}  // namespace

const DimInfo& info(Dim d) {
  return kDimInfo[index_of(d)];
}

const char* to_string(Dim d) {
  return info(d).name;
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
