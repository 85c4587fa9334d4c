#include "sim/cost/layer_ops.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/cost/attention_core.hpp"
#include "sim/cost/attention_ops.hpp"
#include "sim/cost/fp8_recipe.hpp"
#include "sim/cost/kernel_specs.hpp"
#include "sim/cost/lora.hpp"
#include "sim/cost/moe_ops.hpp"
#include "sim/cost/mtp_ops.hpp"
#include "sim/cost/vocab_ops.hpp"

namespace trainsim {

bool decoder_tp_overlap(const Model& model, const Plan& plan) {
  if (!plan.tp_comm_overlap) return false;
  return !(model.mla.is_mla() && plan.effective_framework() == Framework::kMegatron);
}

bool mtp_layer_tp_overlap(const Model& model, const Plan& plan) {
  return decoder_tp_overlap(model, plan) && plan.effective_framework() != Framework::kMegatron;
}

LayerShape layer_shape(const Model& model, const Plan& plan, std::int64_t padded_vocab,
                       bool moe_layer) {
  LayerShape s;
  const double t = static_cast<double>(plan.tp);
  s.tp = plan.tp;
  s.cp = plan.cp;
  s.cp_comm = plan.cp_comm;
  s.cp_head_split = plan.cp_head_split();
  s.cp_ring = plan.cp_ring_size();
  const double seq = static_cast<double>(plan.seq_len), cp = static_cast<double>(plan.cp);
  s.tokens = static_cast<double>(plan.mbs) * seq / cp;
  s.hidden = static_cast<double>(model.hidden_size);
  s.q = static_cast<double>(model.q_size()) / t;
  s.kv = static_cast<double>(model.kv_size()) / t;
  s.v = static_cast<double>(model.v_size()) / t;
  s.ffn = static_cast<double>(model.ffn_hidden_size) / t;
  if (model.mla.is_mla()) {
    const MlaSpec& a = model.mla;
    const double heads = static_cast<double>(model.num_attention_heads) / t;
    s.mla = {static_cast<double>(a.q_lora_rank), static_cast<double>(a.kv_lora_rank),
             static_cast<double>(a.qk_rope_head_dim),
             heads * static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim),
             heads * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim)};
  }
  if (model.moe.is_moe() && moe_layer) {
    auto& m = s.moe;
    m.experts = model.moe.num_experts;
    m.ep = plan.ep;
    m.etp = plan.expert_tp();
    m.local = m.experts / m.ep;
    m.topk = static_cast<double>(model.moe.experts_per_token);
    m.ffn = static_cast<double>(model.moe.expert_ffn_hidden_size) / static_cast<double>(m.etp);
    m.load = expert_rank_load(m.experts, m.local, plan.moe_imbalance, plan.moe_capacity_factor);
    m.dispatcher = plan.moe_dispatcher;
    m.a2a_overlap = plan.moe_a2a_overlap;
    m.grouped = plan.moe_grouped_gemm;
    m.shared_ffn = static_cast<double>(model.moe.shared_expert_ffn_hidden_size) / t;
    m.shared_gate = model.moe.shared_expert_gate;
  }
  s.up_factor = is_gated(model.ffn_kind) ? 2.0 : 1.0;
  s.vocab = static_cast<double>(padded_vocab) / t;
  s.rope = model.position_embedding == PositionEmbedding::kRope;
  s.learned_positions = model.position_embedding == PositionEmbedding::kLearned;
  s.qk_norm = model.qk_norm;
  s.qk_norm_across_heads = model.qk_norm_across_heads;
  s.sandwich_norms = model.sandwich_norms;
  s.sp = plan.sequence_parallel();
  s.tp_comm_overlap = decoder_tp_overlap(model, plan);
  s.batch = plan.mbs;
  s.head_dim = model.head_dim;
  s.heads = model.num_attention_heads / plan.tp;
  s.kv_heads = model.num_kv_heads / plan.tp;
  s.seq = seq;
  if (plan.packs_documents()) s.document = static_cast<double>(plan.packed_document_tokens);
  if (plan.lora()) s.lora = {plan.lora_rank, plan.lora_target_modules};
  // All-to-all context parallelism runs the attention on 1/cp of the heads (1/cp_a2a_size with
  // a2a+p2p, over the ring's share of the sequence).
  s.heads /= s.cp_head_split;
  s.kv_heads /= s.cp_head_split;
  s.gemm_dtype = plan.precision == Precision::kFP8 ? DType::kFP8 : DType::kBF16;
  s.fp8_recipe = plan.fp8_recipe;
  s.unfused_attention = plan.attention_backend == AttentionBackend::kUnfused;
  s.attention_dropout = plan.attention_dropout > 0;
  s.hidden_dropout = plan.hidden_dropout > 0;
  s.norm = model.norm;
  s.ffn_kind = model.ffn_kind;
  return s;
}

LayerShape with_local_attention(const Model& model, LayerShape shape) {
  const LocalAttention& a = model.local_attention;
  const auto size = static_cast<double>(a.size);
  if (a.kind == LocalAttention::Kind::kChunked) shape.local_block = size;
  if (a.kind == LocalAttention::Kind::kSliding) {
    shape.local_block = 2 * size;
    shape.sliding = true;
  }
  return shape;
}

bool experts_gather_tokens(const LayerShape& s) {
  return s.moe.etp > 1 && (s.sp || s.tp == 1);
}

Dim expert_tp_dim(const LayerShape& s) {
  return s.moe.etp == s.tp ? Dim::kTP : Dim::kETP;
}

double routed_expert_rows(const LayerShape& s) {
  const auto& m = s.moe;
  const double gathered = experts_gather_tokens(s) ? static_cast<double>(m.etp) : 1.0;
  return s.sharded_tokens() * m.topk * gathered * m.load;
}

double expert_rank_load(std::int64_t experts, std::int64_t local, double imbalance,
                        double capacity_factor) {
  const double e = static_cast<double>(experts), l = static_cast<double>(local);
  const double cap = capacity_factor > 0 ? capacity_factor : e;
  const double busiest = std::min(imbalance, cap);
  const double others = experts > 1 ? std::min((e - imbalance) / (e - 1.0), cap) : 0.0;
  return (busiest + (l - 1.0) * others) / l;
}

void add_collective(std::vector<CollectiveLoad>& list, const CollectiveLoad& load) {
  for (auto& c : list) {
    if (c.kind == load.kind && c.dim == load.dim && c.alongside == load.alongside) {
      c.bytes += load.bytes;
      c.count += load.count;
      return;
    }
  }
  list.push_back(load);
}

CollectiveLoad collective_load(const std::vector<CollectiveLoad>& list, CollectiveKind kind,
                               Dim dim) {
  CollectiveLoad out{kind, dim, 0, 0};
  for (const auto& c : list) {
    if (c.kind != kind || c.dim != dim) continue;
    out.bytes += c.bytes;
    out.count += c.count;
  }
  return out;
}

void tp_after(BlockPass& p, CollectiveKind kind, double bytes, std::int64_t n) {
  add_collective(p.collectives, {kind, Dim::kTP, bytes * static_cast<double>(n), n});
}

void tp_call(BlockPass& p, CollectiveKind kind, double bytes, bool alongside, std::string gemm,
             OverlapMethod method) {
  add_collective(p.collectives, {kind, Dim::kTP, bytes, 1, alongside});
  if (alongside) p.overlaps.push_back({kind, bytes, {std::move(gemm)}, method, Dim::kTP});
}

void tp_beside(BlockPass& p, CollectiveKind kind, double bytes, std::string gemm) {
  tp_call(p, kind, bytes, true, std::move(gemm), OverlapMethod::kBulk);
}

double gathered_bytes(const LayerShape& s) {
  return s.gemm_dtype == DType::kFP8 ? 1.0 : s.act_bytes;
}

CollectiveKind column_input_gradient_call(const LayerShape& s) {
  return s.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
}

void column_linear_backward_calls(BlockPass& p, const LayerShape& s, const std::string& name,
                                  double gathered, double gradient) {
  if (s.sp) tp_beside(p, CollectiveKind::kAllGather, gathered, name + ".dgrad");
  tp_beside(p, column_input_gradient_call(s), gradient, name + ".wgrad");
}

namespace {

// The forward's TP collectives. Without sequence parallelism the row-parallel outputs are
// all-reduced after their GEMMs. With it each column-parallel GEMM's input is all-gathered
// and each row-parallel GEMM's output reduce-scattered; --tp-comm-overlap runs each beside its
// GEMM (Transformer Engine's defaults: ring exchange for the gathers, 4-way pipelined
// reduce-scatters).
void decoder_forward_tp(const LayerShape& s, BlockPass& p) {
  const double T = s.tokens, h = s.hidden, e = s.act_bytes;
  if (!s.sp) {
    tp_after(p, CollectiveKind::kAllReduce, T * h * e, 2);  // after out_proj and mlp_down
    return;
  }
  const bool ub = s.tp_comm_overlap;
  const double a = gathered_bytes(s);
  tp_call(p, CollectiveKind::kAllGather, T * h * a, ub, attention_in_gemm(s),
          OverlapMethod::kRingExchange);
  tp_call(p, CollectiveKind::kReduceScatter, T * h * e, ub, "out_proj", OverlapMethod::kPipelined);
  if (s.is_moe()) return;  // the experts' own collectives (moe_ops.hpp)
  tp_call(p, CollectiveKind::kAllGather, T * h * a, ub, "mlp_up", OverlapMethod::kRingExchange);
  tp_call(p, CollectiveKind::kReduceScatter, T * h * e, ub, "mlp_down", OverlapMethod::kPipelined);
}

// The backward's. A column-parallel GEMM's input gradient is all-reduced (reduce-scattered
// with sequence parallelism) while its weight gradient runs: Megatron-LM and Transformer Engine
// post it asynchronously, with or without --tp-comm-overlap. With sequence parallelism the
// GEMM's input is gathered again for the weight gradient, beside the data gradient, and each
// row-parallel GEMM's output gradient is all-gathered first (beside its data gradient, in FP8,
// with --tp-comm-overlap).
void decoder_backward_tp(const LayerShape& s, BlockPass& p) {
  const double T = s.tokens, h = s.hidden, e = s.act_bytes;
  if (!s.sp) {
    tp_call(p, CollectiveKind::kAllReduce, T * h * e, true, "mlp_up.wgrad", OverlapMethod::kBulk);
    tp_call(p, CollectiveKind::kAllReduce, T * h * e, true, "qkv_proj.wgrad", OverlapMethod::kBulk);
    return;
  }
  const bool ub = s.tp_comm_overlap;
  const double a = gathered_bytes(s), grad = ub ? a : e;
  // Each row-parallel GEMM with the column-parallel one before it, in backward order.
  const std::pair<std::string, std::string> layers[] = {{"mlp_down", "mlp_up"},
                                                        {"out_proj", attention_in_gemm(s)}};
  for (const auto& [row, column] : layers) {
    if (s.is_moe() && row == "mlp_down") continue;  // the experts' own collectives
    tp_call(p, CollectiveKind::kAllGather, T * h * grad, ub, row + ".dgrad",
            OverlapMethod::kRingExchange);
    tp_call(p, CollectiveKind::kAllGather, T * h * a, true, column + ".dgrad",
            OverlapMethod::kBulk);
    tp_call(p, CollectiveKind::kReduceScatter, T * h * e, true, column + ".wgrad",
            OverlapMethod::kBulk);
  }
}

// Context parallelism's collectives around the attention core (sim/plan/plan.hpp, CpComm), on
// the rank's tokens. A ring exchange is an all-gather's traffic (ring - 1 blocks to the next
// rank) run beside the attention steps it feeds: the pass waits where a transfer outlasts the
// block attention before it (sim/cost/tp_overlap.hpp, ring exchange). The backward's ring
// carries the K/V blocks and their gradient accumulators. With a2a+p2p the all-to-alls run over
// the a2a level first, and the ring over the p2p level carries K/V of 1/cp_a2a_size of the heads
// for cp_a2a_size times the rank's tokens.
void ring_exchange(BlockPass& p, bool backward, double gathered, Dim dim) {
  const double bytes = backward ? 2.0 * gathered : gathered;
  add_collective(p.collectives, {CollectiveKind::kAllGather, dim, bytes, 1, true});
  const std::string core = backward ? "attention.grad" : "attention";
  p.overlaps.push_back({CollectiveKind::kAllGather,
                        bytes,
                        {core, core + ".ring"},
                        OverlapMethod::kRingExchange,
                        dim});
}

void decoder_cp(const LayerShape& s, BlockPass& p, bool backward) {
  const double e = s.act_bytes, T = s.tokens;
  // K and V of every rank of the ring, on the rank's share of the heads.
  const double gathered =
      static_cast<double>(s.cp) * T * 2.0 * s.kv * e / static_cast<double>(s.cp_head_split);
  // Q, K, V in and the output back (their gradients in the backward).
  const double traded = T * (2.0 * s.q + 2.0 * s.kv) * e;
  switch (s.cp_comm) {
    case CpComm::kP2P:
      ring_exchange(p, backward, gathered, Dim::kCP);
      return;
    case CpComm::kA2AP2P:
      add_collective(p.collectives, {CollectiveKind::kAllToAll, Dim::kCPA2A, traded, 4, false});
      ring_exchange(p, backward, gathered, Dim::kCPP2P);
      return;
    case CpComm::kAllGather:
      add_collective(p.collectives, {CollectiveKind::kAllGather, Dim::kCP, gathered, 1, false});
      if (backward) {
        add_collective(p.collectives,
                       {CollectiveKind::kReduceScatter, Dim::kCP, gathered, 1, false});
      }
      return;
    case CpComm::kA2A:
      add_collective(p.collectives, {CollectiveKind::kAllToAll, Dim::kCP, traded, 4, false});
      return;
  }
}

std::string norm_op(const LayerShape& s) {
  return to_string(s.norm);
}

std::string act_op(const LayerShape& s) {
  return to_string(s.ffn_kind);
}

// A block's residual add; with hidden dropout Megatron-LM's fused bias-dropout-add, which also
// writes the 1-byte mask its backward (residual_add_grad) reads.
void residual_add(std::vector<KernelSpec>& k, const LayerShape& s) {
  k.push_back(elementwise("residual_add", "add", s.sharded_tokens(), s.hidden));
  if (s.hidden_dropout) {
    k.push_back(elementwise("hidden_dropout", "dropout_mask", s.sharded_tokens(), s.hidden));
  }
}

void residual_add_grad(std::vector<KernelSpec>& k, const LayerShape& s) {
  k.push_back(elementwise("residual_add.grad", "add", s.sharded_tokens(), s.hidden));
  if (s.hidden_dropout) {
    k.push_back(elementwise("hidden_dropout.grad", "dropout.grad", s.sharded_tokens(), s.hidden));
  }
}

void decoder_forward(const LayerShape& s, BlockPass& p) {
  const double T = s.tokens, h = s.hidden, S = s.sharded_tokens();
  const DType g = s.gemm_dtype;
  auto& k = p.kernels;
  k.push_back(elementwise("input_norm", norm_op(s), S, h));
  attention_in_forward(k, s);
  attention_core(k, s, false);
  linear(k, "out_proj", T, s.v, h, g);
  if (s.sandwich_norms) k.push_back(elementwise("attention_output_norm", norm_op(s), S, h));
  residual_add(k, s);
  k.push_back(elementwise("post_attention_norm", norm_op(s), S, h));
  if (s.is_moe()) {
    moe_forward(s, p);
  } else {
    linear(k, "mlp_up", T, h, s.up_factor * s.ffn, g);
    k.push_back(elementwise("activation", act_op(s), T, s.ffn));
    linear(k, "mlp_down", T, s.ffn, h, g);
  }
  if (s.sandwich_norms) k.push_back(elementwise("mlp_output_norm", norm_op(s), S, h));
  residual_add(k, s);
  if (s.tp > 1) decoder_forward_tp(s, p);
  if (s.cp > 1) decoder_cp(s, p, false);
}

void decoder_backward(const LayerShape& s, BlockPass& p) {
  const double T = s.tokens, h = s.hidden, S = s.sharded_tokens();
  const DType g = s.gemm_dtype;
  auto& k = p.kernels;
  residual_add_grad(k, s);
  if (s.sandwich_norms) {
    k.push_back(elementwise("mlp_output_norm.grad", norm_op(s) + ".grad", S, h));
  }
  if (s.is_moe()) {
    moe_backward(s, p);
  } else {
    gemm_backward(k, "mlp_down", T, s.ffn, h, g);
    k.push_back(elementwise("activation.grad", act_op(s) + ".grad", T, s.ffn));
    gemm_backward(k, "mlp_up", T, h, s.up_factor * s.ffn, g);
  }
  k.push_back(elementwise("post_attention_norm.grad", norm_op(s) + ".grad", S, h));
  residual_add_grad(k, s);
  if (s.sandwich_norms) {
    k.push_back(elementwise("attention_output_norm.grad", norm_op(s) + ".grad", S, h));
  }
  gemm_backward(k, "out_proj", T, s.v, h, g);
  // FlashAttention's backward does 2.5x the forward FLOPs (its benchmark convention).
  attention_core(k, s, true);
  attention_in_backward(k, s);
  k.push_back(elementwise("input_norm.grad", norm_op(s) + ".grad", S, h));
  if (s.tp > 1) decoder_backward_tp(s, p);
  if (s.cp > 1) decoder_cp(s, p, true);
}

}  // namespace

KernelSpec optimizer_kernel(std::string name, std::string op, std::int64_t params) {
  KernelShape shape = MemoryShape{std::move(op), 1, params};
  return {std::move(name), KernelKind::kOptimizer, 0.0, shape_bytes(shape), shape, 1};
}

BlockPass block_pass(BlockKind block, bool backward, const LayerShape& s) {
  BlockPass p;
  switch (block) {
    case BlockKind::kDecoder:
      if (backward) {
        decoder_backward(s, p);
      } else {
        decoder_forward(s, p);
      }
      break;
    case BlockKind::kMtp:
      mtp_module(s, p, backward);
      break;
    case BlockKind::kFinalNorm:
      p.kernels.push_back(elementwise(backward ? "final_norm.grad" : "final_norm",
                                      norm_op(s) + (backward ? ".grad" : ""), s.sharded_tokens(),
                                      s.hidden));
      break;
    case BlockKind::kEmbedding:
    case BlockKind::kLmHead:
    case BlockKind::kCast:
    case BlockKind::kLoss:
      vocab_block(block, backward, s, p);
      break;
  }
  return p;
}

bool is_weight_gradient(const KernelSpec& k) {
  return k.name.ends_with(".wgrad") || k.name == "embedding.grad";
}

BlockPasses block_passes(BlockKind block, const LayerShape& s) {
  BlockPasses p{block_pass(block, false, s), block_pass(block, true, s)};
  if (s.gemm_dtype == DType::kFP8 && s.fp8_recipe == Fp8Recipe::kTensorwise) {
    // The forward gathers column-parallel inputs; the backward, as many row-parallel outputs'
    // gradients.
    const std::int64_t gathered = tp_gather_calls(p.forward);
    add_current_scaling(p.forward, s, gathered);
    add_current_scaling(p.backward, s, gathered);
  }
  if (s.lora.rank > 0) apply_lora(p, block, s);
  return p;
}

}  // namespace trainsim
