#include "sim/evaluate/steady_replay.hpp"

namespace trainsim {

std::optional<SteadyReplay> steady_replay(const Plan& plan) {
  if (plan.schedule == ScheduleKind::kGPipe) return std::nullopt;
  const std::int64_t m = plan.num_microbatches();
  // Interleaved, the schedule table repeats per group of micro-batches; otherwise per one.
  std::int64_t period = 1;
  if (plan.schedule == ScheduleKind::kInterleaved) {
    period = plan.microbatch_group_size_per_vp_stage > 0 ? plan.microbatch_group_size_per_vp_stage
                                                         : plan.pp;
  }
  // The warm-up and the cool-down each span fewer than pp x vp + period micro-batches, and no
  // more are in flight at once: the window, as long, holds a whole state of the pipeline.
  const std::int64_t margin = plan.pp * plan.vp + period;
  // Deferred LM-head weight gradients (--defer-embedding-wgrad-compute) shorten the first
  // backwards and lengthen the flush: the shorter step replays the same only where every
  // deferred one comes before the window.
  if (plan.defer_embedding_wgrad_compute &&
      (plan.wgrad_deferral_limit == 0 || plan.wgrad_deferral_limit > margin)) {
    return std::nullopt;
  }
  std::int64_t shorter = 3 * margin + period;
  shorter += ((m - shorter) % period + period) % period;  // same remainder: same last group
  if (2 * shorter > m) return std::nullopt;
  SteadyReplay r;
  r.shorter = plan;
  r.shorter.gbs = shorter * plan.mbs * plan.dp;
  r.window = {margin, 2 * margin, period};
  r.periods_added = (m - shorter) / period;
  return r;
}

}  // namespace trainsim
