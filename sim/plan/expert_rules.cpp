#include "sim/plan/expert_rules.hpp"

#include <string>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"

namespace trainsim {

namespace {

// The stride of the pipeline dimension among ranks enumerated in `order` with these sizes.
std::int64_t pipeline_stride(const RankOrder& order, std::int64_t tp, std::int64_t cp,
                             std::int64_t ep, std::int64_t dp) {
  std::int64_t stride = 1;
  for (const Dim d : order) {
    if (d == Dim::kPP) return stride;
    stride *= d == Dim::kTP ? tp : d == Dim::kCP ? cp : d == Dim::kEP ? ep : dp;
  }
  return stride;
}

// Options that only a mixture-of-experts model can take.
void refuse_on_dense(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  const std::string dense = "applies to mixture-of-experts models; " + model.name + " is dense";
  if (plan.ep != 1) fail_input(origin.of("ep"), "expert parallelism " + dense);
  if (plan.etp != 0 && plan.etp != plan.tp) fail_input(origin.of("etp"), dense);
  if (plan.moe_imbalance != 1.0) fail_input(origin.of("moe_imbalance"), dense);
  if (plan.moe_capacity_factor != 0.0) fail_input(origin.of("moe_capacity_factor"), dense);
  if (plan.moe_a2a_overlap) fail_input(origin.of("overlap_moe_expert_parallel_comm"), dense);
  if (!plan.moe_grouped_gemm) fail_input(origin.of("moe_grouped_gemm"), dense);
  if (plan.moe_dispatcher != MoeDispatcher::kAllToAll) {
    fail_input(origin.of("moe_token_dispatcher_type"), dense);
  }
}

// Where the experts may go: Megatron-Core's divisibility rules, its pipeline groups, and sequence
// parallelism wherever MoE layers meet tensor parallelism.
void check_expert_layout(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  const auto& moe = model.moe;
  const std::int64_t etp = plan.expert_tp();
  if (moe.num_experts % plan.ep != 0) {
    fail_input(origin.of("ep"), "must divide the number of experts (" +
                                    std::to_string(moe.num_experts) + "), got " +
                                    std::to_string(plan.ep));
  }
  if (moe.expert_ffn_hidden_size % etp != 0) {
    fail_input(origin.of(plan.etp > 0 ? "etp" : "tp"),
               "must divide the expert FFN hidden size (" +
                   std::to_string(moe.expert_ffn_hidden_size) + "), got " + std::to_string(etp));
  }
  // Megatron-Core re-divides the dense layers' tp x cp x dp ranks of a stage as etp x ep x edp.
  const std::int64_t ranks = plan.tp * plan.cp * plan.dp;
  if (ranks % (etp * plan.ep) != 0) {
    fail_input(origin.of("ep"), "ep x etp = " + std::to_string(plan.ep) + " x " +
                                    std::to_string(etp) +
                                    " must divide tp x cp x dp = " + std::to_string(plan.tp) +
                                    " x " + std::to_string(plan.cp) + " x " +
                                    std::to_string(plan.dp) + " = " + std::to_string(ranks) +
                                    (etp == plan.tp ? " (with etp = tp: ep must divide dp x cp = " +
                                                          std::to_string(plan.dp * plan.cp) + ")"
                                                    : ""));
  }
  if (pipeline_stride(plan.rank_order, plan.tp, plan.cp, 1, plan.dp) !=
      pipeline_stride(plan.rank_order, etp, 1, plan.ep, ranks / (etp * plan.ep))) {
    fail_input(origin.of("rank_order"),
               "puts pipeline stages on different GPUs in the dense and the expert layers (" +
                   to_string(plan.rank_order) +
                   "); Megatron-Core requires the same pipeline groups: use tp-cp-ep-dp-pp");
  }
  if (plan.tp > 1 && !plan.sp) {
    // Megatron-LM: "When using expert parallelism and tensor parallelism, sequence parallelism
    // must be used"; without EP, Megatron-Core's MoE layer (since 0.8): "During training,
    // performance may degrade if MoE and tensor parallelism are enabled without also enabling
    // sequence parallelism" (a ValueError).
    const std::string tp = origin.name("tp") + " " + std::to_string(plan.tp),
                      sp = origin.name("sp");
    fail_input(origin.of("sp"),
               plan.ep > 1 ? "expert parallelism with " + tp + " needs " + sp +
                                 " (sequence parallelism), as in Megatron-LM"
                           : "a mixture-of-experts model with " + tp + " needs " + sp +
                                 " (sequence parallelism): Megatron-Core refuses to train MoE "
                                 "layers under tensor parallelism without it");
  }
}

// Megatron-Core's rules (TransformerConfig) for what runs again beside the experts: the
// all-to-all overlap replays one micro-batch's dispatch beside another's compute, which full
// recomputation and a recomputed MoE layer (its dispatch run again) break, and it schedules at
// most one multi-token-prediction module; moe_act recomputes the grouped GEMM's activation.
void check_overlap_and_recompute(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  const std::string overlap = origin.name("overlap_moe_expert_parallel_comm");
  if (plan.moe_a2a_overlap && plan.recompute == Recompute::kFull) {
    fail_input(origin.of("overlap_moe_expert_parallel_comm"),
               "cannot run with " + origin.name("recompute") +
                   " full (Megatron-Core: disable full recomputation when enabling "
                   "overlap_moe_expert_parallel_comm)");
  }
  if (plan.moe_a2a_overlap && plan.recompute == Recompute::kSelective &&
      (plan.recompute_modules & kRecomputeMoe) != 0) {
    fail_input(origin.of("recompute_modules"),
               "moe cannot be recomputed with " + overlap +
                   " (Megatron-Core: the recomputed MoE layer runs its dispatch again)");
  }
  if (plan.moe_a2a_overlap && model.mtp_layers > 1) {
    fail_input(origin.of("overlap_moe_expert_parallel_comm"),
               "takes at most one multi-token-prediction module (Megatron-Core), the model has " +
                   std::to_string(model.mtp_layers));
  }
  if (!plan.moe_grouped_gemm && plan.recompute == Recompute::kSelective &&
      (plan.recompute_modules & kRecomputeMoeAct) != 0) {
    fail_input(origin.of("recompute_modules"),
               "moe_act needs the grouped expert GEMMs (Megatron-Core), not sequential experts "
               "(--no-moe-grouped-gemm)");
  }
}

// The routing and dispatch options: the skew an expert can take, the capacity, the overlap.
void check_moe_options(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  const auto& moe = model.moe;
  // A token goes to top-k distinct experts: an expert takes at most every token, k / E of them
  // on average.
  const double most =
      static_cast<double>(moe.num_experts) / static_cast<double>(moe.experts_per_token);
  if (plan.moe_imbalance < 1.0 || plan.moe_imbalance > most) {
    fail_input(origin.of("moe_imbalance"),
               "must be in [1, experts / top-k = " + format_number(most) + "], got " +
                   format_number(plan.moe_imbalance));
  }
  if (plan.moe_capacity_factor < 0.0) {
    fail_input(origin.of("moe_capacity_factor"), "must be positive (or 0: dropless)");
  }
  if (plan.moe_a2a_overlap && (plan.ep == 1 || plan.moe_dispatcher != MoeDispatcher::kAllToAll)) {
    fail_input(origin.of("overlap_moe_expert_parallel_comm"),
               "overlaps the expert all-to-alls: needs " + origin.name("ep") +
                   " > 1 and the alltoall dispatcher");
  }
  check_overlap_and_recompute(plan, model, origin);
}

}  // namespace

void validate_expert_parallelism(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  if (plan.ep < 1) {
    fail_input(origin.of("ep"), "must be at least 1, got " + std::to_string(plan.ep));
  }
  if (plan.etp < 0) {
    fail_input(origin.of("etp"), "must be at least 1, got " + std::to_string(plan.etp));
  }
  if (!model.moe.is_moe()) {
    refuse_on_dense(plan, model, origin);
    return;
  }
  check_expert_layout(plan, model, origin);
  check_moe_options(plan, model, origin);
}

}  // namespace trainsim
