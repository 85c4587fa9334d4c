#include "sim/plan/plan_variants.hpp"

#include <algorithm>
#include <cassert>

namespace trainsim {

Plan with_gbs(const Plan& plan, std::int64_t gbs) {
  Plan p = plan;
  p.gbs = gbs;
  return p;
}

Plan with_tp_dp(const Plan& plan, std::int64_t tp, std::int64_t dp) {
  Plan p = plan;
  p.tp = tp;
  p.dp = dp;
  // Switches that only exist with TP go where TP does (else every tp 1 candidate is invalid).
  p.sp = plan.sp && tp > 1;
  p.tp_comm_overlap = plan.tp_comm_overlap && tp > 1;
  return p;
}

Plan with_cp(const Plan& plan, std::int64_t cp) {
  Plan p = plan;
  p.cp = cp;
  const std::int64_t a = plan.cp_a2a_size;
  if (plan.cp_comm != CpComm::kA2AP2P || a == 0 || (a < cp && cp % a == 0)) return p;
  p.cp_comm = a % cp == 0 ? CpComm::kA2A : CpComm::kP2P;
  p.cp_a2a_size = 0;
  return p;
}

Plan with_cp_dp(const Plan& plan, std::int64_t cp, std::int64_t dp) {
  Plan p = with_cp(plan, cp);
  p.dp = dp;
  return p;
}

bool divides_batch(const Plan& plan) {
  return plan.gbs <= 0 || plan.gbs % (plan.mbs * plan.dp) == 0;
}

RankOrder moved_after(RankOrder order, Dim d, std::optional<Dim> anchor) {
  const auto from = std::find(order.begin(), order.end(), d);
  assert(from != order.end() && anchor != d);
  std::rotate(from, from + 1, order.end());  // d last, the others in their order
  const auto at = anchor ? std::find(order.begin(), order.end() - 1, *anchor) + 1 : order.begin();
  std::rotate(at, order.end() - 1, order.end());
  return order;
}

}  // namespace trainsim
