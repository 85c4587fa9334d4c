// Context parallelism by ring (p2p, and a2a+p2p's rings): each step's K/V transfer runs beside
// the block attention before it. When a rank's share of the sequence is short (a short sequence
// over a large CP group), or the ring crosses the network, the transfers outlast the steps and the
// attention waits for them: the stall the cost model prices beside the attention
// (sim/cost/tp_overlap). The fix compares the plans cp_exchange_alternatives builds from the plan
// alone.
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

// The ring's dimension: the CP group, or a2a+p2p's p2p level.
Dim ring_dim(const Plan& plan) {
  return plan.cp_comm == CpComm::kA2AP2P ? Dim::kCPP2P : Dim::kCP;
}

std::string where_ring_runs(const Plan& plan, std::int64_t gpus_per_node) {
  const GroupSpan span = group_span(Layout(plan).group(ring_dim(plan), 0), gpus_per_node);
  return span.in_one_node() ? "over NVLink"
                            : "across " + std::to_string(span.nodes) + " nodes, over the network";
}

}  // namespace

std::vector<Plan> cp_exchange_alternatives(const Plan& plan, const Model& model) {
  std::vector<Plan> out;
  const RankOrder& order = plan.rank_order;
  const auto tp = std::find(order.begin(), order.end(), Dim::kTP);
  const auto cp = std::find(order.begin(), order.end(), Dim::kCP);
  if (cp > tp + 1) {  // CP outside TP with a dimension between them
    Plan p = plan;
    p.rank_order = moved_after(order, Dim::kCP, Dim::kTP);
    out.push_back(p);
  }
  // a2a over the whole group, or over a level of it (a2a+p2p) with the ring over the rest.
  const auto heads_split = [&](std::int64_t a) {
    return model.num_attention_heads % (plan.tp * a) == 0 &&
           model.num_kv_heads % (plan.tp * a) == 0;
  };
  for (const CpComm kind : {CpComm::kP2P, CpComm::kA2A}) {
    if (kind == plan.cp_comm || (kind == CpComm::kA2A && !heads_split(plan.cp))) continue;
    Plan p = plan;
    p.cp_comm = kind;
    p.cp_a2a_size = 0;
    out.push_back(p);
  }
  for (std::int64_t a = 2; a < plan.cp; ++a) {
    if (plan.cp % a != 0 || !heads_split(a) || a == plan.cp_head_split()) continue;
    Plan p = plan;
    p.cp_comm = CpComm::kA2AP2P;
    p.cp_a2a_size = a;
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
  const bool ring = plan.cp_comm == CpComm::kP2P || plan.cp_comm == CpComm::kA2AP2P;
  if (plan.cp < 2 || !ring) return {};
  const Dim dim = ring_dim(plan);
  const auto& stages = context.costs.stages;
  const StageShare worst = largest_share(stages.size(), [&](std::size_t s) {
    return std::pair{stages[s].forward.stall(dim) + stages[s].backward.stall(dim),
                     stages[s].forward.seconds + stages[s].backward.seconds};
  });
  if (worst.share <= kCpStallThreshold) return {};
  // The tokens each ring step's block attention takes (a2a+p2p: the a2a level's, on its share
  // of the heads).
  const std::int64_t tokens = plan.mbs * plan.seq_len / plan.cp_ring_size();
  const std::string how = plan.cp_comm == CpComm::kP2P
                              ? "by ring (p2p)"
                              : "by a2a+p2p (rings of " + std::to_string(plan.cp_ring_size()) + ")";
  Diagnostic d;
  d.id = "cp-ring-exposed";
  d.severity = Severity::kWarning;
  d.stage = static_cast<std::int64_t>(worst.stage) % plan.pp;
  d.message = "context parallelism of " + std::to_string(plan.cp) + " " + how +
              " stalls the attention: each GPU's " + format_grouped(tokens) +
              " tokens per micro-batch make ring steps too short to hide their K/V transfers " +
              where_ring_runs(plan, context.platform.node.gpus_per_node) + " (" +
              format_seconds(worst.part) + " per micro-batch, " +
              format_fixed(100 * worst.share, 1) + " % of the stage's forward and backward)";
  return {{std::move(d),
           PricedAlternatives{cp_exchange_alternatives(plan, context.model), std::nullopt}}};
}

}  // namespace trainsim
