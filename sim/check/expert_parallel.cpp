// Expert parallelism's three defects. A skewed router (--moe-imbalance) makes the GPU holding the
// busiest expert compute more rows than the others, and every GPU waits for it at the combine.
// An expert-parallel group the rank order spreads over more nodes than it needs sends its
// all-to-alls over InfiniBand where NVLink would carry them. Expert tensor parallelism splits
// every expert into narrower GEMMs and gathers the routed tokens around them where a larger EP
// could hold the same share of the experts whole. All-to-alls left on the compute
// stream stop every MoE layer twice a pass where another micro-batch's compute could hide them.
// Each detector names the plans its fix compares, built here from the plan alone.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "sim/check/detect.hpp"
#include "sim/check/pass_calls.hpp"
#include "sim/check/stage_share.hpp"
#include "sim/core/format.hpp"
#include "sim/cost/layer_ops.hpp"
#include "sim/cost/pass_groups.hpp"
#include "sim/plan/layout.hpp"
#include "sim/plan/plan_variants.hpp"

namespace trainsim {

namespace {

// The share of a stage's forward and backward the busiest GPU's extra expert rows may take
// before it is a defect.
constexpr double kImbalanceThreshold = 0.10;

// The share of the step whole experts (a larger EP instead of expert TP) must save before split
// ones are a defect.
constexpr double kExpertsWholeMinGain = 0.05;

// The share of a stage's forward and backward (with their collectives) the expert all-to-alls
// on the compute stream may take before it is a defect.
constexpr double kA2aExposedThreshold = 0.10;

// Seconds of a pass the expert kernels (grouped GEMMs, their activation) spend beyond what the
// balanced load would: they scale with the rows, `load` times the balanced ones.
double extra_expert_seconds(const PassCost& pass, double load) {
  double s = 0;
  for (const auto& k : pass.kernels) {
    if (k.name.find(".expert_") == std::string::npos) continue;
    s += k.time.seconds * static_cast<double>(k.count);
  }
  return s * (1.0 - 1.0 / load);
}

// Seconds per micro-batch a stage's forward and backward wait for their expert all-to-alls:
// all of them on the compute stream, or, overlapped with the layers' compute
// (--overlap-moe-expert-parallel-comm), what outlasts it.
double a2a_wait_seconds(const StageCost& stage, const Plan& plan, const PassGroups& groups) {
  double a2a = 0;
  for (const PassCost* pass : {&stage.forward, &stage.backward}) {
    a2a += plan.moe_a2a_overlap ? pass->stall(Dim::kEP)
                                : call_seconds(*pass, Dim::kEP, CollectiveKind::kAllToAll, groups);
  }
  return a2a;
}

// Over the stages, the largest share of a stage's forward and backward (with their collectives)
// its passes wait for their expert all-to-alls.
StageShare largest_a2a_wait(const CheckContext& context) {
  const PassGroups groups(context.platform, context.plan);
  const auto& stages = context.costs.stages;
  return largest_share(stages.size(), [&](std::size_t s) {
    return std::pair{a2a_wait_seconds(stages[s], context.plan, groups), context.stage_times[s]};
  });
}

// The plan with the EP dimension moved right after TP in its rank order.
std::optional<Plan> ep_next_to_tp(const Plan& plan) {
  Plan p = plan;
  p.rank_order = moved_after(plan.rank_order, Dim::kEP, Dim::kTP);
  if (p.rank_order == plan.rank_order) return std::nullopt;
  return p;
}

}  // namespace

std::vector<Plan> expert_load_alternatives(const Plan& plan) {
  std::vector<Plan> out;
  for (double capacity : {1.25, 1.0}) {
    if (plan.moe_capacity_factor > 0 && plan.moe_capacity_factor <= capacity) continue;
    Plan p = plan;
    p.moe_capacity_factor = capacity;
    out.push_back(p);
  }
  if (plan.ep % 2 == 0) {
    Plan p = plan;
    p.ep = plan.ep / 2;
    out.push_back(p);
  }
  return out;
}

std::vector<Plan> ep_within_node_alternatives(const Plan& plan, std::int64_t gpus_per_node) {
  std::vector<Plan> out;
  const std::optional<Plan> reordered = ep_next_to_tp(plan);
  if (reordered) out.push_back(*reordered);
  std::int64_t ep = plan.ep;
  while (ep % 2 == 0 && ep > 2) {
    ep /= 2;
    Plan p = reordered.value_or(plan);
    p.ep = ep;
    out.push_back(p);
    if (ep * plan.expert_tp() <= gpus_per_node) break;
  }
  // A smaller expert TP, EP kept: the expert layout strides EP by etp, so an EP group lies in
  // one node once ep x etp GPUs do.
  if (plan.ep <= gpus_per_node) {
    for (std::int64_t etp = plan.expert_tp(); etp % 2 == 0 && plan.ep * etp > gpus_per_node;) {
      etp /= 2;
      Plan p = plan;
      p.etp = etp;
      out.push_back(p);
    }
  }
  return out;
}

std::vector<Plan> experts_whole_alternatives(const Plan& plan, std::int64_t num_experts) {
  std::vector<Plan> out;
  const std::int64_t experts_split = plan.ep * plan.expert_tp();
  for (std::int64_t etp = plan.expert_tp() / 2; etp >= 1; etp /= 2) {
    if (experts_split % etp != 0) break;
    Plan p = plan;
    p.etp = etp;
    p.ep = experts_split / etp;
    if (num_experts % p.ep == 0) out.push_back(p);
  }
  return out;
}

std::vector<Finding> find_expert_imbalance(const CheckContext& context) {
  const Plan& plan = context.plan;
  const Model& model = context.model;
  if (!model.moe.is_moe() || plan.moe_imbalance <= 1.0) return {};
  const std::int64_t local = model.moe.num_experts / plan.ep;
  const double load =
      expert_rank_load(model.moe.num_experts, local, plan.moe_imbalance, plan.moe_capacity_factor);
  if (load <= 1.0) return {};
  const auto& stages = context.costs.stages;
  const StageShare worst = largest_share(stages.size(), [&](std::size_t s) {
    return std::pair{extra_expert_seconds(stages[s].forward, load) +
                         extra_expert_seconds(stages[s].backward, load),
                     stages[s].forward.seconds + stages[s].backward.seconds};
  });
  if (worst.share <= kImbalanceThreshold) return {};
  Diagnostic d;
  d.id = "expert-imbalance";
  d.severity = Severity::kWarning;
  d.stage = static_cast<std::int64_t>(worst.stage) % plan.pp;
  d.message =
      "expert load imbalance: the busiest expert takes " + format_fixed(plan.moe_imbalance, 2) +
      " times the mean tokens, so the GPU holding it (" + std::to_string(local) + " of the " +
      std::to_string(model.moe.num_experts) + " experts) computes " + format_fixed(load, 2) +
      " times the balanced rows and every GPU waits for it at the combine: " +
      format_seconds(worst.part) + " per micro-batch, " + format_fixed(100 * worst.share, 1) +
      " % of the stage's forward and backward";
  return {{std::move(d), PricedAlternatives{expert_load_alternatives(plan), std::nullopt}}};
}

std::vector<Finding> find_ep_across_nodes(const CheckContext& context) {
  const Plan& plan = context.plan;
  if (plan.ep < 2) return {};
  const std::int64_t per_node = context.platform.node.gpus_per_node;
  const GroupSpan span = group_span(Layout(plan).group(Dim::kEP, 0), per_node);
  if (span.in_one_node()) return {};
  const std::int64_t fewest = (plan.ep + per_node - 1) / per_node;
  Diagnostic d;
  d.id = "ep-across-nodes";
  d.severity = Severity::kWarning;
  d.message = "the expert-parallel group of " + std::to_string(plan.ep) + " GPUs spans " +
              std::to_string(span.nodes) + " nodes" +
              (span.nodes > fewest ? " (it fits in " + std::to_string(fewest) +
                                         (fewest == 1 ? " node" : " nodes") + ")"
                                   : "") +
              ": every MoE layer's token all-to-alls, forward and backward, cross InfiniBand "
              "instead of NVLink";
  if (const StageShare wait = largest_a2a_wait(context); wait.part > 0) {
    d.message += std::string(plan.moe_a2a_overlap
                                 ? " (overlapped with the layers' compute, they outlast it: "
                                 : " (") +
                 "each micro-batch's passes wait " + format_seconds(wait.part) + " for them, " +
                 format_fixed(100 * wait.share, 1) + " % of the stage's forward and backward)";
  }
  return {{std::move(d), PricedAlternatives{ep_within_node_alternatives(plan, per_node), 0.0}}};
}

std::vector<Finding> find_expert_tp_split(const CheckContext& context) {
  const Plan& plan = context.plan;
  const MoeSpec& moe = context.model.moe;
  const std::int64_t etp = plan.expert_tp();
  if (!moe.is_moe() || etp < 2) return {};
  const std::string n = std::to_string(etp);
  Diagnostic d;
  d.id = "expert-tp-split";
  d.severity = Severity::kWarning;
  d.message =
      "expert tensor parallelism " + n + " splits each of the " + format_grouped(moe.num_experts) +
      " experts' FFNs (" + format_grouped(moe.expert_ffn_hidden_size) + " wide) into GEMMs " +
      format_grouped(moe.expert_ffn_hidden_size / etp) +
      " wide, and every MoE layer gathers its routed tokens over those " + n +
      " GPUs and reduce-scatters the experts' outputs back, forward and backward; an EP up "
      "to " +
      n + " times larger holds the same share of the experts on each GPU, each expert whole";
  return {{std::move(d), PricedAlternatives{experts_whole_alternatives(plan, moe.num_experts),
                                            kExpertsWholeMinGain}}};
}

std::vector<Finding> find_ep_a2a_exposed(const CheckContext& context) {
  const Plan& plan = context.plan;
  if (plan.ep < 2 || plan.moe_a2a_overlap || plan.moe_dispatcher != MoeDispatcher::kAllToAll) {
    return {};
  }
  const StageShare worst = largest_a2a_wait(context);
  if (worst.share <= kA2aExposedThreshold) return {};
  Diagnostic d;
  d.id = "ep-a2a-exposed";
  d.severity = Severity::kWarning;
  d.stage = static_cast<std::int64_t>(worst.stage) % plan.pp;
  d.message =
      "the expert-parallel all-to-alls run on the compute stream: every MoE layer waits "
      "for its tokens to reach their experts and come back, forward and backward (" +
      format_seconds(worst.part) + " per micro-batch, " + format_fixed(100 * worst.share, 1) +
      " % of the stage's forward and backward with their collectives)";
  // Megatron-Core runs the overlap without full recomputation and without the MoE layer
  // recomputed: the fix recomputes selectively what it may.
  Plan overlapped = plan;
  overlapped.moe_a2a_overlap = true;
  // (Full recomputation keeps the default modules, the attention core: the rules refuse others.)
  if (overlapped.recompute == Recompute::kFull) {
    overlapped = recomputing(overlapped, Recompute::kSelective);
  }
  overlapped.recompute_modules &= ~kRecomputeMoe;
  if (overlapped.recompute_modules == 0) overlapped.recompute_modules = kRecomputeCoreAttn;
  return {{std::move(d), PricedAlternatives{{overlapped}, 0.0}}};
}

}  // namespace trainsim
