#pragma once
// A plan with one setting changed and the switches that depend on it kept valid: the steps every
// alternative plan (a diagnostic's fix, the memory search, the neighbourhood) is built from.
#include <cstdint>
#include <optional>

#include "sim/plan/plan.hpp"

namespace trainsim {

/// The plan with another global batch.
Plan with_gbs(const Plan& plan, std::int64_t gbs);
/// The plan with another TP and DP (at tp 1 without sequence parallelism or TP overlap).
Plan with_tp_dp(const Plan& plan, std::int64_t tp, std::int64_t dp);
/// The plan with another CP, a2a+p2p's a2a level kept where it still splits the new CP (at or
/// above it, a2a alone; where it no longer divides it, p2p).
Plan with_cp(const Plan& plan, std::int64_t cp);
/// The plan with another CP and DP (the same GPUs when cp x dp is kept).
Plan with_cp_dp(const Plan& plan, std::int64_t cp, std::int64_t dp);

/// Whether mbs x dp divides the global batch (always, where the plan has none).
bool divides_batch(const Plan& plan);

/// The rank order with dimension d moved to just after `anchor` (just inside it: d's groups
/// then take the ranks next to `anchor`'s), or innermost without one; the other dimensions keep
/// their order. What the rank-order fixes do: TP innermost, CP or EP next to TP.
RankOrder moved_after(RankOrder order, Dim d, std::optional<Dim> anchor);

}  // namespace trainsim
