#include "sim/plan/optimizer_rules.hpp"

#include <algorithm>
#include <string>

#include "sim/core/error.hpp"

namespace trainsim {

namespace {

// Where d sits in the rank order, innermost 0.
std::size_t depth(const RankOrder& order, Dim d) {
  return static_cast<std::size_t>(std::find(order.begin(), order.end(), d) - order.begin());
}

}  // namespace

void validate_optimizer_state(const Plan& plan, const PlanOrigin& origin) {
  if (plan.optimizer_state == OptimizerState::kFp32 || plan.zero >= 1) return;
  fail_input(origin.of("optimizer_state"),
             std::string(to_string(plan.optimizer_state)) +
                 " runs on the distributed optimizer (Megatron-Core's precision-aware optimizer, "
                 "NeMo's distributed_fused_adam): needs " +
                 origin.name("zero") + " 1 or more");
}

void validate_optimizer_instances(const Plan& plan, const PlanOrigin& origin) {
  const std::int64_t instances = plan.num_distributed_optimizer_instances;
  if (instances == 1) return;
  const std::string field = "num_distributed_optimizer_instances";
  // --zero 1 or 2: Megatron-LM's partial distributed optimizer; --zero 3: hybrid sharding (PyTorch
  // FSDP's HSDP, torchtitan's replicate degree), weights sharded within an instance as well.
  if (plan.zero < 1 || plan.effective_framework() != Framework::kMegatron) {
    fail_input(origin.of(field),
               "needs sharded data parallelism (" + origin.name("zero") +
                   " 1 to 3, framework megatron): Megatron-LM's distributed optimizer, or "
                   "hybrid sharding (HSDP) with " +
                   origin.name("zero") + " 3");
  }
  // Megatron-LM asks dp x cp to be a multiple; an instance is then a run of consecutive ranks of
  // the data-parallel group with CP. trainsim builds instances of whole CP groups: a multiple of
  // dp, with CP inside DP in the rank order (the default).
  if (plan.dp % instances != 0) {
    fail_input(origin.of(field), "must divide " + origin.name("dp") + " (" +
                                     std::to_string(plan.dp) +
                                     "): each instance holds dp / N whole data-parallel "
                                     "replicas, got " +
                                     std::to_string(instances));
  }
  if (plan.data_shards() / instances < 2) {
    fail_input(origin.of(field),
               "leaves one rank per instance (dp x cp = " + std::to_string(plan.data_shards()) +
                   "), which shards nothing: use " + origin.name("zero") +
                   " 0 to all-reduce the gradients, or fewer instances");
  }
  if (plan.cp > 1 && depth(plan.rank_order, Dim::kCP) > depth(plan.rank_order, Dim::kDP)) {
    fail_input(origin.of(field), "needs CP inside DP in " + origin.name("rank_order") +
                                     " (as Megatron-LM's default tp-cp-ep-dp-pp) so that an "
                                     "instance holds whole context-parallel groups");
  }
  if (plan.expert_data_shards() % instances != 0) {
    fail_input(origin.of(field),
               "must divide the expert-data-parallel size (world / (etp x ep x pp) = " +
                   std::to_string(plan.expert_data_shards()) + "), as Megatron-LM asks; got " +
                   std::to_string(instances));
  }
}

}  // namespace trainsim
