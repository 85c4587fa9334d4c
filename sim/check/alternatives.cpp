#include "sim/check/alternatives.hpp"

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"

namespace trainsim {

Priced price(const Model& model, const Platform& platform, const Plan& plan, Partition partition) {
  const Evaluation e = evaluate(model, platform, plan, std::move(partition));
  Priced p;
  p.plan = plan;
  p.partition = e.partition;
  p.step_time_s = e.sim.step_time_s;
  p.tokens_per_s = static_cast<double>(plan.sequences_per_step() * plan.seq_len) / p.step_time_s;
  return p;
}

std::optional<Priced> price(const Model& model, const Platform& platform, const Plan& plan) {
  try {
    validate_plan(plan, model, platform, {});
    return price(model, platform, plan, build_partition(model, platform, plan));
  } catch (const InputError&) {
    return std::nullopt;
  }
}

bool partition_is_defective(const Partition& partition) {
  if (partition.dropped_layers > 0) return true;
  for (std::int64_t s = 0; s < partition.num_stages(); ++s) {
    if (!partition.has_parameters(s)) return true;
  }
  return false;
}

std::optional<Priced> smaller_pp_without_defect(const Model& model, const Platform& platform,
                                                const Plan& plan) {
  for (std::int64_t pp = plan.pp - 1; pp >= 1; --pp) {
    if ((plan.pp * plan.dp) % pp != 0) continue;
    Plan alt = plan;
    alt.pp = pp;
    alt.dp = plan.pp * plan.dp / pp;
    if (alt.gbs > 0 && alt.gbs % (alt.mbs * alt.dp) != 0) continue;
    auto priced = price(model, platform, alt);
    if (priced && !partition_is_defective(priced->partition)) return priced;
  }
  return std::nullopt;
}

std::string step_comparison(double alternative, double now) {
  std::string change = format_fixed((alternative - now) / now * 100.0, 1);
  if (change == "-0.0") change = "0.0";
  if (change[0] != '-' && change != "0.0") change = "+" + change;
  return "step " + format_seconds(alternative) + " (" + change + " % vs " + format_seconds(now) +
         " now)";
}

}  // namespace trainsim
