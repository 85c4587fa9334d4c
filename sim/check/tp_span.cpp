// Tensor parallelism across nodes: its all-reduces leave NVLink for the network. Where a TP group
// lies is the Layout's answer, so the rank order counts as much as the TP size: TP wider than a
// node, or a rank order that numbers a TP group's GPUs far apart, both put it on the network.
#include <algorithm>

#include "sim/check/detect.hpp"
#include "sim/plan/layout.hpp"
#include "sim/plan/plan_variants.hpp"

namespace trainsim {

namespace {

// Whether the group is consecutive ranks (TP innermost, or only size-1 dimensions inside it).
bool consecutive(const std::vector<std::int64_t>& ranks) {
  for (std::size_t i = 1; i < ranks.size(); ++i) {
    if (ranks[i] != ranks[i - 1] + 1) return false;
  }
  return true;
}

// The TP group on the most nodes, of every stage: one group per position modulo a node stands
// for the rest (rank 0's is in one node where a node holds 8 and TP is 3, ranks 6-8's is not).
std::vector<std::int64_t> widest_tp_group(const Plan& plan, std::int64_t gpus_per_node) {
  const Layout layout(plan);
  std::vector<std::int64_t> widest = layout.group(Dim::kTP, 0);
  std::int64_t most = group_span(widest, gpus_per_node).nodes;
  const std::vector<std::int64_t> offsets = layout.offset_residues({Dim::kTP}, gpus_per_node);
  for (std::int64_t stage = 0; stage < plan.pp; ++stage) {
    for (std::int64_t offset : offsets) {
      auto group = layout.group(Dim::kTP, layout.stage_leader(stage) + offset);
      const std::int64_t nodes = group_span(group, gpus_per_node).nodes;
      if (nodes > most) {
        most = nodes;
        widest = std::move(group);
      }
    }
  }
  return widest;
}

bool tp_in_one_node(const Plan& plan, std::int64_t gpus_per_node) {
  return group_span(widest_tp_group(plan, gpus_per_node), gpus_per_node).in_one_node();
}

// The message for consecutive ranks wider than a node, or straddling two where TP does not
// divide the node.
std::string consecutive_message(const Plan& plan, const std::vector<std::int64_t>& group,
                                std::int64_t gpus_per_node) {
  if (plan.tp <= gpus_per_node) {
    return "tensor parallelism of " + std::to_string(plan.tp) + " does not divide the " +
           std::to_string(gpus_per_node) + " GPUs of a node: the TP group of ranks " +
           std::to_string(group.front()) + " to " + std::to_string(group.back()) +
           " straddles two nodes, and the step waits for its all-reduces over the network";
  }
  return "tensor parallelism of " + std::to_string(plan.tp) + " spans nodes of " +
         std::to_string(gpus_per_node) + " GPUs: its all-reduces leave NVLink for the network";
}

// The message for a group the rank order spreads out: how far apart and on how many nodes.
std::string spread_message(const Plan& plan, const std::vector<std::int64_t>& group,
                           const GroupSpan& span, std::int64_t gpus_per_node) {
  const std::string per_node = span.per_node == 0   ? "unevenly spread"
                               : span.per_node == 1 ? "one per node"
                                                    : std::to_string(span.per_node) + " per node";
  return "tensor parallelism of " + std::to_string(plan.tp) + " spans " +
         std::to_string(span.nodes) + " nodes of " + std::to_string(gpus_per_node) +
         " GPUs: rank order " + to_string(plan.rank_order) + " numbers a TP group's GPUs " +
         std::to_string(group[1] - group[0]) + " apart (" + per_node +
         "), so its all-reduces leave NVLink for the network";
}

// TP within a node on the same GPUs: the largest size up to the plan's that divides a node,
// DP growing, or PP where it takes the rest whole (a model too large for more DP replicas fits
// deeper); TP innermost where the plan's rank order would still spread it over nodes.
std::vector<Plan> within_node(const Plan& plan, std::int64_t gpus_per_node) {
  std::int64_t tp = std::min(plan.tp, gpus_per_node);
  while (gpus_per_node % tp != 0 || (plan.tp * plan.dp) % tp != 0) --tp;
  std::vector<Plan> out = {with_tp_dp(plan, tp, plan.dp * plan.tp / tp)};
  if ((plan.tp * plan.pp) % tp == 0 && plan.tp != tp) {
    Plan deeper = with_tp_dp(plan, tp, plan.dp);
    deeper.pp = plan.pp * plan.tp / tp;
    out.push_back(deeper);
  }
  for (Plan& alt : out) {
    if (!tp_in_one_node(alt, gpus_per_node)) {
      alt.rank_order = moved_after(plan.rank_order, Dim::kTP, std::nullopt);
    }
  }
  return out;
}

}  // namespace

std::vector<Finding> find_tp_across_nodes(const CheckContext& context) {
  const Plan& plan = context.plan;
  const std::int64_t node = context.platform.node.gpus_per_node;
  const std::vector<std::int64_t> group = widest_tp_group(plan, node);
  const GroupSpan span = group_span(group, node);
  if (span.in_one_node()) return {};
  Diagnostic d;
  d.id = "tp-across-nodes";
  d.severity = Severity::kWarning;
  d.message = consecutive(group) ? consecutive_message(plan, group, node)
                                 : spread_message(plan, group, span, node);
  return {{std::move(d), PricedAlternatives{within_node(plan, node), std::nullopt}}};
}

}  // namespace trainsim
