// The interleaved schedule with its pipeline exchanges on the compute stream: every chunk's
// output waits to reach the next stage, and every chunk's input gradient the previous one, before
// the stage computes on. Megatron-LM overlaps them by default (--overlap-p2p-communication);
// Megatron-Core's ModelParallelConfig does not (overlap_p2p_comm False), and NeMo turns the
// overlap on only through MegatronCommOverlapCallback, so a NeMo recipe without that callback (its
// LoRA fine-tuning recipes among them) waits. Once the pipeline's stages sit on different nodes
// the exchanges cross the network, and the wait is a real share of the step. The fix is the
// overlap, priced on the same GPUs.
#include <string>

#include "sim/check/detect.hpp"
#include "sim/check/stage_share.hpp"
#include "sim/collective/group_collectives.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/layout.hpp"
#include "sim/platform/topology.hpp"

namespace trainsim {

namespace {

// The part of a stage's chunks' forward and backward the exchanges may take before it is a defect.
constexpr double kExchangeWaitThreshold = 0.05;

}  // namespace

std::vector<Finding> find_pp_exchanges_exposed(const CheckContext& context) {
  const Plan& plan = context.plan;
  if (plan.pp < 2 || plan.schedule != ScheduleKind::kInterleaved || plan.p2p_overlap()) return {};
  const Layout layout(plan);
  const Topology topology(context.platform, plan.world_size());
  const std::vector<std::int64_t> gpu = layout.group(Dim::kPP, 0);  // one GPU of each stage
  const auto& stages = context.costs.stages;
  const auto virtual_stages = static_cast<std::int64_t>(stages.size());
  const StageShare worst = largest_share(static_cast<std::size_t>(plan.pp), [&](std::size_t s) {
    const auto stage = static_cast<std::int64_t>(s);
    const std::int64_t here = gpu[s];
    const std::int64_t next = gpu[static_cast<std::size_t>((stage + 1) % plan.pp)];
    const std::int64_t previous = gpu[static_cast<std::size_t>((stage + plan.pp - 1) % plan.pp)];
    double wait = 0, whole = 0;
    // Chunk c of stage s is virtual stage c x pp + s: it sends its output to the next virtual
    // stage and its input's gradient back to the previous one, once each per micro-batch.
    for (std::int64_t k = stage; k < virtual_stages; k += plan.pp) {
      const auto at = static_cast<std::size_t>(k);
      whole += context.stage_times[at];
      if (k + 1 < virtual_stages) {
        wait += send_recv_seconds(topology, here, next, stages[at].p2p_bytes);
      }
      if (k > 0) wait += send_recv_seconds(topology, here, previous, stages[at - 1].p2p_bytes);
    }
    return std::pair{wait, whole};
  });
  if (worst.share <= kExchangeWaitThreshold) return {};
  // Whether the stage's exchanges cross the network, towards either neighbour.
  const auto pp = static_cast<std::size_t>(plan.pp);
  const auto node = [&](std::size_t s) { return topology.node_of(gpu[s % pp]); };
  const bool across_nodes =
      node(worst.stage) != node(worst.stage + 1) || node(worst.stage) != node(worst.stage + pp - 1);
  Diagnostic d;
  d.id = "pp-exchanges-exposed";
  d.severity = Severity::kWarning;
  d.stage = static_cast<std::int64_t>(worst.stage);
  d.message =
      "the interleaved pipeline waits for its exchanges on the compute stream (pipeline "
      "communication not overlapped): each micro-batch's outputs and input gradients of " +
      std::to_string(plan.vp) + " chunks per stage, " +
      format_bytes(stages[worst.stage].p2p_bytes) + " each, " +
      (across_nodes ? "crossing the network between nodes" : "over NVLink") + ", take " +
      format_seconds(worst.part) + " per micro-batch, " + format_fixed(100 * worst.share, 1) +
      " % of its chunks' forward and backward; Megatron-LM overlaps them by default, NeMo "
      "only with MegatronCommOverlapCallback";
  Plan overlapped = plan;
  overlapped.overlap_p2p_comm = true;
  return {{std::move(d), PricedAlternatives{{overlapped}, 0.0}}};
}

}  // namespace trainsim
