#include <algorithm>
#include <cassert>
#include <limits>
#include <optional>
#include <utility>

#include "sim/plan/partition.hpp"

namespace trainsim {

namespace {

// A stage starts with the embedding, a decoder layer or the final norm, so the final norm, LM
// head and loss stay together (Megatron's L), the multi-token-prediction modules stay with the
// last decoder layer and the partition is a Megatron layout; every stage trains something.
class StageRules {
 public:
  StageRules(const std::vector<Block>& blocks, const std::vector<double>& times)
      : blocks_(blocks), prefix_(blocks.size() + 1, 0.0), params_before_(blocks.size() + 1, 0) {
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      prefix_[i + 1] = prefix_[i] + times[i];
      params_before_[i + 1] = params_before_[i] + (has_parameters(blocks[i].kind) ? 1 : 0);
    }
  }
  std::int64_t blocks() const { return static_cast<std::int64_t>(blocks_.size()); }
  // Whether blocks [k, i) may form a stage.
  bool allowed(std::int64_t k, std::int64_t i) const {
    const auto kind = blocks_[static_cast<std::size_t>(k)].kind;
    const bool starts = k == 0 || kind == BlockKind::kDecoder || kind == BlockKind::kFinalNorm;
    return starts && params_before_[static_cast<std::size_t>(i)] !=
                         params_before_[static_cast<std::size_t>(k)];
  }
  double time(std::int64_t k, std::int64_t i) const {
    return prefix_[static_cast<std::size_t>(i)] - prefix_[static_cast<std::size_t>(k)];
  }

 private:
  const std::vector<Block>& blocks_;
  std::vector<double> prefix_;
  std::vector<std::int64_t> params_before_;
};

// The least-cost split and its cost: stage s holds [bounds[s], bounds[s+1]).
template <typename Cost>
struct Split {
  Cost cost;
  std::vector<std::int64_t> bounds;
};

// A dynamic program over (stages formed, blocks used): each state keeps its least cost and the
// cut before its last stage. `extend(prev, k, i)` prices the stage [k, i) after a prefix costing
// `prev`, or returns nullopt where the stage is not allowed.
template <typename Cost, typename Extend>
Split<Cost> solve(const StageRules& rules, std::int64_t parts, Extend extend) {
  const std::int64_t n = rules.blocks();
  const auto idx = [n](std::int64_t j, std::int64_t i) {
    return static_cast<std::size_t>(j * (n + 1) + i);
  };
  const Cost none = std::numeric_limits<Cost>::max();
  std::vector<Cost> best(static_cast<std::size_t>((parts + 1) * (n + 1)), none);
  std::vector<std::int64_t> cut(best.size(), -1);
  best[idx(0, 0)] = Cost{};
  for (std::int64_t j = 1; j <= parts; ++j) {
    for (std::int64_t i = j; i <= n; ++i) {
      for (std::int64_t k = j - 1; k < i; ++k) {
        const Cost prev = best[idx(j - 1, k)];
        if (prev == none || !rules.allowed(k, i)) continue;
        const auto cost = extend(prev, k, i);
        if (cost && *cost < best[idx(j, i)]) {  // the first of equal costs stays
          best[idx(j, i)] = *cost;
          cut[idx(j, i)] = k;
        }
      }
    }
  }
  // Plan validation keeps pp x vp within the layers, so a split always exists.
  assert(best[idx(parts, n)] != none);
  std::vector<std::int64_t> bounds(static_cast<std::size_t>(parts) + 1, 0);
  bounds[static_cast<std::size_t>(parts)] = n;
  for (std::int64_t j = parts; j >= 1; --j) {
    bounds[static_cast<std::size_t>(j - 1)] = cut[idx(j, bounds[static_cast<std::size_t>(j)])];
  }
  return {best[idx(parts, n)], std::move(bounds)};
}

}  // namespace

std::vector<std::int64_t> min_max_bounds(const std::vector<Block>& blocks,
                                         const std::vector<double>& times, std::int64_t parts) {
  assert(times.size() == blocks.size() && parts >= 1);
  const StageRules rules(blocks, times);
  // First the least possible slowest stage.
  const auto minimax = solve<double>(
      rules, parts, [&](double prev, std::int64_t k, std::int64_t i) -> std::optional<double> {
        return std::max(prev, rules.time(k, i));
      });
  // Then, among the splits whose slowest stage equals it but for rounding, the one whose stages
  // start earliest (their first blocks' indices summed least; of equal sums the last stage longest
  // first): a layer that could go to either of two stages goes to the later one, which 1F1B's
  // warm-up leaves fewer micro-batches in flight (with interleaving, within a chunk).
  const double limit = minimax.cost * (1 + 1e-9);
  const auto earliest = solve<std::int64_t>(
      rules, parts,
      [&](std::int64_t prev, std::int64_t k, std::int64_t i) -> std::optional<std::int64_t> {
        if (rules.time(k, i) > limit) return std::nullopt;
        return prev + k;
      });
  return earliest.bounds;
}

}  // namespace trainsim
