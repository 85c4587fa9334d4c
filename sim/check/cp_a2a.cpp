// Context parallelism by all-to-all (a2a, and a2a+p2p's a2a level) trades each layer's sequence
// split for a head split with four all-to-alls a pass (Q, K, V in, the output back), on the
// compute stream. Where the rank order or the level's size spreads that group over nodes, they
// cross InfiniBand where NVLink would carry them. The fix compares the plans
// cp_exchange_alternatives builds from the plan alone, and is withdrawn where none is faster.
#include <string>

#include "sim/check/detect.hpp"
#include "sim/check/pass_calls.hpp"
#include "sim/check/stage_share.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/layout.hpp"

namespace trainsim {

std::vector<Finding> find_cp_a2a_across_nodes(const CheckContext& context) {
  const Plan& plan = context.plan;
  if (plan.cp < 2 || plan.cp_head_split() < 2) return {};
  const bool level = plan.cp_comm == CpComm::kA2AP2P;
  const Dim dim = level ? Dim::kCPA2A : Dim::kCP;
  const GroupSpan span =
      group_span(Layout(plan).group(dim, 0), context.platform.node.gpus_per_node);
  if (span.in_one_node()) return {};
  const PassGroups groups(context.platform, plan);
  const auto& stages = context.costs.stages;
  const StageShare wait = largest_share(stages.size(), [&](std::size_t s) {
    const auto a2a = [&](const PassCost& pass) {
      return call_seconds(pass, dim, CollectiveKind::kAllToAll, groups);
    };
    return std::pair{a2a(stages[s].forward) + a2a(stages[s].backward), context.stage_times[s]};
  });
  const std::int64_t n = plan.cp_head_split();
  Diagnostic d;
  d.id = "cp-a2a-across-nodes";
  d.severity = Severity::kWarning;
  d.stage = static_cast<std::int64_t>(wait.stage) % plan.pp;
  d.message = "context parallelism's all-to-alls run over " +
              (level ? "an a2a level of " + std::to_string(n) + " GPUs (a2a+p2p)"
                     : "the context-parallel group of " + std::to_string(n) + " GPUs (a2a)") +
              " spanning " + std::to_string(span.nodes) +
              " nodes: every layer's Q, K, V and output all-to-alls, forward and backward, "
              "cross InfiniBand instead of NVLink (each micro-batch's passes wait " +
              format_seconds(wait.part) + " for them, " + format_fixed(100 * wait.share, 1) +
              " % of the stage's forward and backward)";
  return {{std::move(d), PricedAlternatives{cp_exchange_alternatives(plan, context.model), 0.0}}};
}

}  // namespace trainsim
