// ZeRO over a data-parallel group of one GPU: the optimizer's state, the gradients (stage 2) and
// the parameters (stage 3) are sharded over dp x cp ranks (and the experts' over the
// expert-data-parallel ranks), so with one there is nothing to shard and every GPU keeps the
// whole of them, as without ZeRO. Stages 2 and 3 still hold their working set for nothing.
#include <optional>
#include <string>

#include "sim/check/detect.hpp"
#include "sim/core/format.hpp"
#include "sim/memory/memory.hpp"

namespace trainsim {

namespace {

// The groups ZeRO shards over, each of one GPU here: "dp x cp = 1" and, for an MoE model, the
// experts' expert-data-parallel group.
std::string groups_of_one(const CheckContext& c) {
  std::string text = "dp x cp = 1";
  if (c.model.moe.is_moe()) {
    text += ", and for the experts world / (etp x ep x pp) = 1";
  }
  return text;
}

// The plan's worst stage's peak memory per GPU.
double worst_peak(const CheckContext& c) {
  std::optional<MemoryModel> computed;
  const MemoryModel& mm = plan_memory(c, computed);
  return mm.stages[static_cast<std::size_t>(mm.worst_stage())].peak_bytes;
}

// A plan with ZeRO stage `stage`, everything else as asked.
Plan with_zero(const Plan& plan, std::int64_t stage) {
  Plan p = plan;
  p.zero = stage;
  return p;
}

}  // namespace

std::vector<Finding> find_zero_unsharded(const CheckContext& context) {
  const Plan& plan = context.plan;
  if (plan.zero == 0 || plan.optimizer_shards() > 1) return {};
  if (context.model.moe.is_moe() && plan.expert_optimizer_shards() > 1) return {};
  const std::string stage = std::to_string(plan.zero);
  Diagnostic d;
  d.id = "zero-unsharded";
  d.severity = plan.zero >= 2 ? Severity::kWarning : Severity::kInfo;
  d.message = "ZeRO stage " + stage + " shards over a group of one GPU (" + groups_of_one(context) +
              "): there is nothing to shard, so every GPU keeps all its optimizer state, "
              "gradients and weights, as without ZeRO";
  if (plan.zero >= 2) {
    d.message += ", and still holds stage " + stage +
                 "'s working set for nothing (a block's full gradients before their "
                 "reduce-scatter" +
                 (plan.zero >= 3 ? std::string(", and the gathered weights of two blocks") : "") +
                 "): the worst stage's peak is " + format_bytes(worst_peak(context)) + " per GPU";
  }
  // Stage 0, and stage 1 where an option needs the distributed optimizer (zero 0 is refused).
  std::vector<Plan> lower{with_zero(plan, 0)};
  if (plan.zero >= 2) lower.push_back(with_zero(plan, 1));
  PricedAlternatives fix{std::move(lower), std::nullopt};
  fix.with_peak = true;
  return {{std::move(d), std::move(fix)}};
}

}  // namespace trainsim
