#include "sim/engine/steady_state.hpp"

#include <algorithm>
#include <cmath>

namespace trainsim {

namespace {

// The same op in two micro-batches: what it does and how long it takes.
bool same_op(const Op& a, const Op& b) {
  return a.type == b.type && a.compute == b.compute && a.comm == b.comm &&
         a.collective == b.collective && a.group == b.group && a.count == b.count &&
         a.seconds == b.seconds && a.bytes == b.bytes && a.num_sends == b.num_sends &&
         a.num_recvs == b.num_recvs && a.stream == b.stream && a.chunk == b.chunk &&
         a.num_deps == b.num_deps;
}

// One rank's ops of each micro-batch of [first, last + period), in program order.
std::vector<std::vector<std::uint32_t>> ops_by_microbatch(const RankProgram& prog,
                                                          const SteadyWindow& w) {
  std::vector<std::vector<std::uint32_t>> out(
      static_cast<std::size_t>(w.last + w.period - w.first));
  for (std::uint32_t i = 0; i < prog.ops.size(); ++i) {
    const std::int64_t mb = prog.ops[i].microbatch;
    if (mb >= w.first && mb < w.last + w.period)
      out[static_cast<std::size_t>(mb - w.first)].push_back(i);
  }
  return out;
}

}  // namespace

std::optional<double> steady_shift(const TaskGraph& graph,
                                   const std::vector<std::vector<double>>& done,
                                   const std::vector<std::vector<double>>& stretch,
                                   const SteadyWindow& window) {
  if (window.period < 1 || window.first < 0 || window.last <= window.first) return std::nullopt;
  double end = 0;
  for (const auto& rank : done) {
    for (double t : rank) end = std::max(end, t);
  }
  const double tolerance = 1e-12 * std::max(end, 1.0);
  std::optional<double> shift;
  for (std::size_t r = 0; r < graph.ranks.size(); ++r) {
    const RankProgram& prog = graph.ranks[r];
    const auto by_mb = ops_by_microbatch(prog, window);
    const auto extra = [&](std::uint32_t i) { return stretch.empty() ? 0.0 : stretch[r][i]; };
    for (std::int64_t k = 0; k < window.last - window.first; ++k) {
      const auto& now = by_mb[static_cast<std::size_t>(k)];
      const auto& later = by_mb[static_cast<std::size_t>(k + window.period)];
      if (now.empty() || now.size() != later.size()) return std::nullopt;
      for (std::size_t j = 0; j < now.size(); ++j) {
        const auto a = now[j], b = later[j];
        if (!same_op(prog.ops[a], prog.ops[b]) || std::abs(extra(a) - extra(b)) > tolerance)
          return std::nullopt;
        const double d = done[r][b] - done[r][a];
        if (!shift) shift = d;
        if (std::abs(d - *shift) > tolerance) return std::nullopt;
      }
    }
  }
  if (!shift || !(*shift > 0)) return std::nullopt;
  return shift;
}

}  // namespace trainsim
