// Context parallelism by ring (p2p): each step's K/V transfer runs beside the block attention
// before it. When a rank's share of the sequence is short (a short sequence over a large CP
// group), or the ring crosses the network, the transfers outlast the steps and the attention
// waits for them: the stall the cost model prices beside the attention (sim/cost/tp_overlap).
// The fix compares the plans cp_ring_alternatives builds from the plan alone.
#include <algorithm>
#include <optional>
#include <string>

#include "sim/check/detect.hpp"
#include "sim/check/stage_share.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/layout.hpp"
#include "sim/plan/plan_variants.hpp"

namespace trainsim {

namespace {

// The part of a stage's forward and backward the ring's stall may take before it is a defect.
constexpr double kCpStallThreshold = 0.05;

std::string where_ring_runs(const Plan& plan, std::int64_t gpus_per_node) {
  const GroupSpan span = group_span(Layout(plan).group(Dim::kCP, 0), gpus_per_node);
  return span.in_one_node() ? "over NVLink"
                            : "across " + std::to_string(span.nodes) + " nodes, over the network";
}

}  // namespace

std::vector<Plan> cp_ring_alternatives(const Plan& plan, const Model& model) {
  std::vector<Plan> out;
  const RankOrder& order = plan.rank_order;
  const auto tp = std::find(order.begin(), order.end(), Dim::kTP);
  const auto cp = std::find(order.begin(), order.end(), Dim::kCP);
  if (cp > tp + 1) {  // CP outside TP with a dimension between them
    Plan p = plan;
    p.rank_order = moved_after(order, Dim::kCP, Dim::kTP);
    out.push_back(p);
  }
  const std::int64_t split = plan.tp * plan.cp;
  if (model.num_attention_heads % split == 0 && model.num_kv_heads % split == 0) {
    Plan p = plan;
    p.cp_comm = CpComm::kA2A;
    out.push_back(p);
  }
  if (plan.cp % 2 == 0) {
    const Plan p = with_cp_dp(plan, plan.cp / 2, plan.dp * 2);
    if (divides_batch(p)) out.push_back(p);
  }
  return out;
}

std::vector<Finding> find_cp_ring_exposed(const CheckContext& context) {
  const Plan& plan = context.plan;
  if (plan.cp < 2 || plan.cp_comm != CpComm::kP2P) return {};
  const auto& stages = context.costs.stages;
  const StageShare worst = largest_share(stages.size(), [&](std::size_t s) {
    return std::pair{stages[s].forward.stall(Dim::kCP) + stages[s].backward.stall(Dim::kCP),
                     stages[s].forward.seconds + stages[s].backward.seconds};
  });
  if (worst.share <= kCpStallThreshold) return {};
  const std::int64_t tokens = plan.mbs * plan.seq_len / plan.cp;
  Diagnostic d;
  d.id = "cp-ring-exposed";
  d.severity = Severity::kWarning;
  d.stage = static_cast<std::int64_t>(worst.stage) % plan.pp;
  d.message = "context parallelism of " + std::to_string(plan.cp) +
              " by ring (p2p) stalls the attention: each GPU's " + format_grouped(tokens) +
              " tokens per micro-batch make ring steps too short to hide their K/V transfers " +
              where_ring_runs(plan, context.platform.node.gpus_per_node) + " (" +
              format_seconds(worst.part) + " per micro-batch, " +
              format_fixed(100 * worst.share, 1) + " % of the stage's forward and backward)";
  return {
      {std::move(d), PricedAlternatives{cp_ring_alternatives(plan, context.model), std::nullopt}}};
}

}  // namespace trainsim
