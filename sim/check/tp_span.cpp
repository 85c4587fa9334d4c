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

bool tp_in_one_node(const Plan& plan, std::int64_t gpus_per_node) {
  return group_span(Layout(plan).group(Dim::kTP, 0), gpus_per_node).in_one_node();
}

// The message for consecutive ranks wider than a node.
std::string wider_than_node_message(const Plan& plan, std::int64_t gpus_per_node) {
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

// TP within a node on the same GPUs: at most a node wide (DP growing), and TP innermost where the
// plan's rank order would still spread it over nodes.
Plan within_node(const Plan& plan, std::int64_t gpus_per_node) {
  const std::int64_t tp = std::min(plan.tp, gpus_per_node);
  Plan alt = with_tp_dp(plan, tp, plan.dp * plan.tp / tp);
  if (!tp_in_one_node(alt, gpus_per_node)) {
    alt.rank_order = moved_after(plan.rank_order, Dim::kTP, std::nullopt);
  }
  return alt;
}

}  // namespace

std::vector<Finding> find_tp_across_nodes(const CheckContext& context) {
  const Plan& plan = context.plan;
  const std::int64_t node = context.platform.node.gpus_per_node;
  const std::vector<std::int64_t> group = Layout(plan).group(Dim::kTP, 0);
  const GroupSpan span = group_span(group, node);
  if (span.in_one_node()) return {};
  Diagnostic d;
  d.id = "tp-across-nodes";
  d.severity = Severity::kWarning;
  d.message = consecutive(group) ? wider_than_node_message(plan, node)
                                 : spread_message(plan, group, span, node);
  return {{std::move(d), PricedAlternatives{{within_node(plan, node)}, std::nullopt}}};
}

}  // namespace trainsim
