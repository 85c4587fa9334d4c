#include "sim/plan/plan_variants.hpp"

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

Plan with_cp_dp(const Plan& plan, std::int64_t cp, std::int64_t dp) {
  Plan p = plan;
  p.cp = cp;
  p.dp = dp;
  return p;
}

bool divides_batch(const Plan& plan) {
  return plan.gbs <= 0 || plan.gbs % (plan.mbs * plan.dp) == 0;
}

}  // namespace trainsim
