#include "sim/search/plan_space.hpp"

#include <algorithm>
#include <cassert>
#include <memory>
#include <utility>

#include "sim/check/detect.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/deferral_rules.hpp"
#include "sim/plan/optimizer_rules.hpp"

namespace trainsim {

namespace {

// The one place an InputError becomes a value: runs `step` and returns the error's message, or
// nullopt when it went through. Every way a candidate is refused (validation, partition rule,
// costs, memory, simulation) passes through here.
template <class Step>
std::optional<std::string> refusal(Step&& step) {
  try {
    step();
    return std::nullopt;
  } catch (const InputError& e) {
    return std::string(e.what());
  }
}

// The busiest physical stage's forward and backward kernels over every micro-batch: virtual
// stage v runs on physical stage v % pp, each once per micro-batch.
double kernel_floor_s(const Plan& plan, const CostModel& costs) {
  std::vector<double> per_stage(static_cast<std::size_t>(plan.pp), 0.0);
  for (std::size_t v = 0; v < costs.stages.size(); ++v) {
    const StageCost& c = costs.stages[v];
    per_stage[v % per_stage.size()] += c.forward.seconds + c.backward.seconds;
  }
  return static_cast<double>(plan.num_microbatches()) *
         *std::max_element(per_stage.begin(), per_stage.end());
}

}  // namespace

Outcome Outcome::infeasible(std::string reason) {
  Outcome o;
  o.reason_ = std::move(reason);
  return o;
}

const Priced& Outcome::operator*() const {
  assert(priced_ && "an infeasible candidate has no price");
  return *priced_;
}

Simulator analytic_simulator(const Model& model, const Platform& platform) {
  // The candidates share the platform, so their groups' shapes are priced once for all.
  auto shapes = std::make_shared<CollectiveShapes>();
  return [&model, &platform, shapes](const Plan& plan, const Partition& partition) {
    return evaluate(model, platform, plan, partition, EngineKind::kAnalytic, shapes.get())
        .sim.step_time_s;
  };
}

PlanSpace::PlanSpace(const Model& model, const Platform& platform, const Plan& plan,
                     const Partition& partition, std::optional<double> baseline_step_s,
                     Simulator simulate)
    : model_(model),
      platform_(platform),
      plan_(plan),
      partition_(partition),
      baseline_(baseline_step_s),
      simulate_(simulate ? std::move(simulate) : analytic_simulator(model, platform)) {}

double PlanSpace::baseline() {
  if (!baseline_) {
    ++simulations_;
    baseline_ = simulate_(plan_, partition_);
  }
  return *baseline_;
}

PlanSpace::Assessment& PlanSpace::assess(const Candidate& candidate) {
  auto [at, inserted] = assessed_.try_emplace(candidate);
  Assessment& a = at->second;
  if (!inserted) return a;
  const Plan& plan = candidate.plan;
  a.refused = refusal([&] {
    validate_plan(plan, model_, platform_, {});
    a.partition = candidate.balanced ? balanced_partition(model_, platform_, plan)
                                     : build_partition(model_, platform_, plan);
  });
  if (a.partition) a.defect = partition_defect(*a.partition);
  return a;
}

void PlanSpace::measure_memory(const Plan& plan, Assessment& a) {
  if (a.peak_bytes || a.memory_refused) return;
  a.memory_refused = refusal([&] {
    const CostModel costs = compute_costs(model_, platform_, plan, *a.partition);
    const MemoryModel memory = compute_memory(model_, platform_, plan, *a.partition, costs);
    a.peak_bytes = memory.stages[static_cast<std::size_t>(memory.worst_stage())].peak_bytes;
    a.fits = memory.fits();
    a.step_floor_s = kernel_floor_s(plan, costs);
  });
}

Outcome PlanSpace::simulated(const Plan& plan, Assessment& a, std::optional<double> peak_bytes) {
  if (!a.step_time_s && !a.simulation_refused) {
    ++simulations_;
    a.simulation_refused = refusal([&] { a.step_time_s = simulate_(plan, *a.partition); });
  }
  if (a.simulation_refused) return Outcome::infeasible(*a.simulation_refused);
  Priced p;
  p.plan = plan;
  p.partition = *a.partition;
  p.step_time_s = *a.step_time_s;
  p.tokens_per_s = static_cast<double>(plan.sequences_per_step() * plan.seq_len) / p.step_time_s;
  p.peak_bytes = peak_bytes;
  return Outcome(std::move(p));
}

// A candidate that changes the data parallelism or the optimizer under several
// distributed-optimizer instances keeps them where Megatron-LM's rules still allow them, else
// goes back to one instance (the fix then names that change too).
Candidate PlanSpace::with_valid_options(const Candidate& candidate) {
  Candidate c = candidate;
  // Megatron-LM's uneven first and last stages are options of its uniform rule, refused beside
  // any other --partition: a candidate on the balanced partition goes without them (and its fix
  // says so), which changes nothing the balanced partition is built from.
  if (c.balanced) c.plan.clear_uneven_stage_options();
  if (c.plan.num_distributed_optimizer_instances > 1 &&
      refusal([&] { validate_optimizer_instances(c.plan, {}); })) {
    c.plan.num_distributed_optimizer_instances = 1;
  }
  // A candidate without a pipeline, or on another schedule, cannot defer the LM head's weight
  // gradient: it runs without the deferral (and its fix says so).
  if (c.plan.defer_embedding_wgrad_compute &&
      refusal([&] { validate_wgrad_deferral(c.plan, {}); })) {
    c.plan.defer_embedding_wgrad_compute = false;
    c.plan.wgrad_deferral_limit = 0;
  }
  return c;
}

Candidate PlanSpace::as_priced(const Candidate& given) const {
  Candidate candidate = with_valid_options(given);
  // A batch left to Megatron-LM's default (mbs x dp sequences) is the plan's batch for every
  // candidate: one with another dp or mbs runs as many sequences per step, not its own default.
  if (candidate.plan.gbs == 0) candidate.plan.gbs = plan_.global_batch();
  return candidate;
}

std::optional<double> PlanSpace::fitting_step_floor(const Candidate& given) {
  const Candidate candidate = as_priced(given);
  Assessment& a = assess(candidate);
  if (!a.partition || a.defect) return std::nullopt;
  measure_memory(candidate.plan, a);
  if (a.memory_refused || !a.fits) return std::nullopt;
  return a.step_floor_s;
}

Outcome PlanSpace::price(const Candidate& given, Need need) {
  const Candidate candidate = as_priced(given);
  Assessment& a = assess(candidate);
  if (!a.partition) return Outcome::infeasible(*a.refused);
  if (need != Need::kBuildable && a.defect) {
    return Outcome::infeasible("partition defect: " + *a.defect);
  }
  if (need == Need::kFits) {
    measure_memory(candidate.plan, a);
    if (a.memory_refused) return Outcome::infeasible(*a.memory_refused);
    if (!a.fits) return Outcome::infeasible("does not fit: peak " + format_bytes(*a.peak_bytes));
  }
  return simulated(candidate.plan, a, need == Need::kFits ? a.peak_bytes : std::nullopt);
}

}  // namespace trainsim
