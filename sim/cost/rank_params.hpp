#pragma once
// Parameters each GPU holds of one decoder layer (its TP shard of the attention and the MLP, the
// replicated norms and biases, and of a mixture-of-experts layer its EP x expert-TP share of the
// routed experts) and of a pipeline stage's blocks.
#include <cstdint>

#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// Parameters of one dense decoder layer held by each TP rank: sharded projections, replicated
/// norms, row-parallel biases and MLA's down-projections.
std::int64_t layer_params_per_rank(const Model& model, std::int64_t tp);
/// One decoder layer's under a plan: of a mixture-of-experts model, an MoE layer (the experts
/// split over ep x etp, the router replicated, the shared expert split over TP) or, with
/// `moe_layer` false, one of its dense layers.
std::int64_t layer_params_per_rank(const Model& model, const Plan& plan, bool moe_layer = true);
/// Parameters of one MoE layer's routed experts held by each GPU (0 for a dense model).
std::int64_t expert_params_per_rank(const Model& model, const Plan& plan);
/// Parameters of one decoder layer (an MoE layer, or with `moe_layer` false a dense one) that
/// every TP rank holds whole but whose gradient each rank computes from its own share, so that
/// Megatron-Core's finalize_model_grads all-reduces them over TP: with sequence parallelism every
/// replicated one (norms, row-parallel biases, the router, MLA's duplicated down-projections and
/// their norms), each rank having seen its own tokens; without it the q/k norms alone, each rank
/// normalising its own heads. 0 without TP. Routed experts' parameters are not among them.
std::int64_t tp_partial_grads_per_layer(const Model& model, const Plan& plan,
                                        bool moe_layer = true);

/// Whether virtual stage v holds a copy of the word embedding away from the table itself: a tied
/// LM head, or the table a multi-token-prediction module embeds the tokens ahead with.
bool holds_embedding_copy(const Model& model, const Partition& partition, std::int64_t v);

/// The parameters of one pipeline stage's blocks (its GPU's model chunks): logical ones, those
/// each GPU of the stage holds (TP shards, the padded vocabulary, a synchronised copy of a tied
/// LM head or of the embedding a multi-token-prediction module uses), and of those the experts
/// EP splits and the decoder layers' GEMM weights; and of those the word embedding whose gradient
/// is all-reduced with a copy on another stage (Megatron-Core's embedding group: the table and
/// a tied LM head, or the table a multi-token-prediction module embeds with, on different
/// pipeline stages); and of those the ones whose gradients TP all-reduces
/// (tp_partial_grads_per_layer(), with the final norm and a multi-token-prediction module's
/// norms under sequence parallelism). Beside them, not parameters: the experts a stage's MoE
/// layers route to, counted once per layer, when the router keeps an expert bias
/// (Model::MoeSpec::router_expert_bias): each keeps one tokens-per-expert count and one bias.
struct StageParams {
  std::int64_t params = 0;
  std::int64_t per_gpu = 0;
  std::int64_t expert_per_gpu = 0;
  std::int64_t gemm_per_gpu = 0;
  std::int64_t synced_embedding_per_gpu = 0;
  std::int64_t tp_partial_grad_per_gpu = 0;
  std::int64_t expert_bias_counts = 0;
};
StageParams stage_params(const Model& model, const Plan& plan, const Partition& partition,
                         std::int64_t stage, std::int64_t padded_vocab);

}  // namespace trainsim
