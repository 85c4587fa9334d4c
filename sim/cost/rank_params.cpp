#include "sim/cost/rank_params.hpp"

#include "sim/model/params.hpp"

namespace trainsim {

namespace {

// The q/k norms, shared by the heads: every TP rank holds them whole (norms across the heads
// split with them instead).
std::int64_t qk_norm_params(const Model& m) {
  return m.qk_norm_across_heads ? 0 : norm_params(m, m.qk_norm_widths());
}

// An MLP's (an expert's) output bias, added after the TP reduction: every TP rank holds it whole.
std::int64_t mlp_output_bias(const Model& m) {
  return m.mlp_bias ? m.hidden_size : 0;
}

// Whether TP all-reduces the gradients of every parameter its ranks hold whole: under sequence
// parallelism each rank has seen only its own tokens.
bool syncs_replicated_grads(const Plan& plan) {
  return plan.sequence_parallel();
}

// One layer's attention parameters every TP rank holds whole: MLA's down-projections and their
// norms (Megatron-Core's duplicated linears), the output bias and the q/k norms.
std::int64_t attention_replicated(const Model& m) {
  std::int64_t replicated = (m.attention_output_bias ? m.hidden_size : 0) + qk_norm_params(m);
  if (m.mla.is_mla()) {
    const MlaSpec& a = m.mla;
    replicated +=
        m.hidden_size * (a.kv_lora_rank + a.qk_rope_head_dim) + norm_params(m, a.kv_lora_rank);
    if (a.q_lora_rank > 0) {
      replicated += m.hidden_size * a.q_lora_rank + norm_params(m, a.q_lora_rank);
    }
  }
  return replicated;
}

// One layer's attention on a TP rank: the projections split (heads, with their sinks), the rest
// replicated.
std::int64_t attention_params_per_rank(const Model& m, std::int64_t tp) {
  const std::int64_t replicated = attention_replicated(m);
  return (count_params(m).layer_attention - replicated) / tp + replicated;
}

// A dense MLP of width `ffn` on a TP rank: its matrices and up-projection bias split, its output
// bias replicated.
std::int64_t mlp_params_per_rank(const Model& m, std::int64_t ffn, std::int64_t tp) {
  const std::int64_t bias = mlp_output_bias(m);
  return (mlp_params(m, ffn) - bias) / tp + bias;
}

}  // namespace

std::int64_t layer_params_per_rank(const Model& m, std::int64_t tp) {
  return attention_params_per_rank(m, tp) + mlp_params_per_rank(m, m.ffn_hidden_size, tp) +
         count_params(m).layer_norms;
}

std::int64_t expert_params_per_rank(const Model& m, const Plan& plan) {
  if (!m.moe.is_moe()) return 0;
  // Each expert's matrices split over expert TP; its output bias replicated.
  const std::int64_t bias = mlp_output_bias(m);
  const std::int64_t expert = mlp_params(m, m.moe.expert_ffn_hidden_size) - bias;
  return m.moe.num_experts / plan.ep * (expert / plan.expert_tp() + bias);
}

std::int64_t tp_partial_grads_per_layer(const Model& m, const Plan& plan, bool moe_layer) {
  if (!syncs_replicated_grads(plan)) return plan.tp > 1 ? qk_norm_params(m) : 0;
  const bool moe = m.moe.is_moe() && moe_layer;
  const std::int64_t bias = mlp_output_bias(m);
  std::int64_t n = attention_replicated(m) + count_params(m).layer_norms;
  if (!moe) return n + bias;
  if (m.moe.shared_expert_ffn_hidden_size > 0) n += bias;
  return n + gating_params(m);
}

std::int64_t layer_params_per_rank(const Model& m, const Plan& plan, bool moe_layer) {
  if (!m.moe.is_moe() || !moe_layer) return layer_params_per_rank(m, plan.tp);
  std::int64_t n = attention_params_per_rank(m, plan.tp) + count_params(m).layer_norms +
                   gating_params(m) + expert_params_per_rank(m, plan);
  if (m.moe.shared_expert_ffn_hidden_size > 0) {
    n += mlp_params_per_rank(m, m.moe.shared_expert_ffn_hidden_size, plan.tp);
  }
  return n;
}

bool holds_embedding_copy(const Model& model, const Partition& partition, std::int64_t v) {
  if (partition.holds(v, BlockKind::kEmbedding)) return false;
  return (model.tied_embeddings && partition.holds(v, BlockKind::kLmHead)) ||
         partition.holds(v, BlockKind::kMtp);
}

namespace {

// What each GPU holds of one decoder layer of either kind, of its GEMM weights (all but the norms
// and the router; biases are left in: a few thousand parameters a layer), of its experts (held
// apart from the dense weights only when EP re-divides the GPUs), of the parameters whose
// gradients TP all-reduces, and an MoE layer's expert-bias counts (every expert's, whole).
struct LayerShares {
  std::int64_t moe, dense, moe_gemms, dense_gemms, experts, tp_partial_moe, tp_partial_dense,
      expert_bias_counts;
  LayerShares(const Model& model, const Plan& plan, const ParamCount& pc)
      : moe(layer_params_per_rank(model, plan)),
        dense(layer_params_per_rank(model, plan, false)),
        moe_gemms(moe - pc.layer_norms - gating_params(model)),
        dense_gemms(dense - pc.layer_norms),
        experts(plan.ep > 1 ? expert_params_per_rank(model, plan) : 0),
        tp_partial_moe(tp_partial_grads_per_layer(model, plan, true)),
        tp_partial_dense(tp_partial_grads_per_layer(model, plan, false)),
        expert_bias_counts(model.moe.router_expert_bias ? model.moe.num_experts : 0) {}
  void add_layer(StageParams& sp, bool moe_layer) const {
    sp.per_gpu += moe_layer ? moe : dense;
    sp.gemm_per_gpu += moe_layer ? moe_gemms : dense_gemms;
    sp.tp_partial_grad_per_gpu += moe_layer ? tp_partial_moe : tp_partial_dense;
    if (moe_layer) {
      sp.expert_per_gpu += experts;
      sp.expert_bias_counts += expert_bias_counts;
    }
  }
};

// Whether virtual stage v holds the embedding or a copy of it that the other's gradient is
// all-reduced with: the two on different physical stages (on one GPU they are one tensor).
bool syncs_embedding(const Model& model, const Partition& partition, std::int64_t v) {
  const bool table = partition.holds(v, BlockKind::kEmbedding);
  if (!table && !holds_embedding_copy(model, partition, v)) return false;
  const std::int64_t pp = partition.physical_stages();
  for (std::int64_t u = 0; u < partition.num_stages(); ++u) {
    if (u % pp == v % pp) continue;
    if (table ? holds_embedding_copy(model, partition, u)
              : partition.holds(u, BlockKind::kEmbedding)) {
      return true;
    }
  }
  return false;
}

}  // namespace

StageParams stage_params(const Model& model, const Plan& plan, const Partition& partition,
                         std::int64_t stage, std::int64_t padded_vocab) {
  const ParamCount pc = count_params(model);
  const LayerShares layer(model, plan, pc);
  const std::int64_t vocab_rows = padded_vocab / plan.tp;
  StageParams sp;
  bool mtp_embedding_counted = false;
  const auto& range = partition.stages[static_cast<std::size_t>(stage)];
  for (auto i = range.begin; i < range.end; ++i) {
    const Block& block = partition.blocks[static_cast<std::size_t>(i)];
    switch (block.kind) {
      case BlockKind::kEmbedding:
        sp.params += pc.embedding();
        sp.per_gpu += vocab_rows * model.hidden_size + pc.position_embedding;
        break;
      case BlockKind::kDecoder: {
        const bool moe = is_moe_layer(model, block.layer);
        sp.params += pc.layer(moe);
        layer.add_layer(sp, moe);
        break;
      }
      case BlockKind::kMtp: {
        // Its decoder layer, the projection split over TP, three norms replicated.
        const std::int64_t projection = 2 * model.hidden_size * model.hidden_size / plan.tp;
        sp.params += mtp_module_params(model);
        layer.add_layer(sp, mtp_layer_is_moe(model));
        const std::int64_t norms = 3 * norm_params(model, model.hidden_size);
        sp.per_gpu += projection + norms;
        sp.gemm_per_gpu += projection;
        if (syncs_replicated_grads(plan)) sp.tp_partial_grad_per_gpu += norms;
        // The module embeds the tokens ahead: away from the embedding's stage, with a copy.
        if (!partition.holds(stage, BlockKind::kEmbedding) && !mtp_embedding_counted) {
          sp.per_gpu += vocab_rows * model.hidden_size;
        }
        mtp_embedding_counted = true;
        break;
      }
      case BlockKind::kFinalNorm:
        sp.params += pc.final_norm;
        sp.per_gpu += pc.final_norm;
        if (syncs_replicated_grads(plan)) sp.tp_partial_grad_per_gpu += pc.final_norm;
        break;
      case BlockKind::kLmHead:
        sp.params += pc.lm_head;
        // A tied LM head reuses the embedding; on another stage it is a synchronised copy (beside
        // a multi-token-prediction module, whose table is the synchronised one, Megatron-Core's
        // GPTModel still allocates the head's own weight, unused).
        if (!model.tied_embeddings || !partition.holds(stage, BlockKind::kEmbedding)) {
          sp.per_gpu += vocab_rows * model.hidden_size;
        }
        break;
      case BlockKind::kCast:
      case BlockKind::kLoss:
        break;
    }
  }
  if (syncs_embedding(model, partition, stage)) {
    sp.synced_embedding_per_gpu = vocab_rows * model.hidden_size;
  }
  return sp;
}

}  // namespace trainsim
