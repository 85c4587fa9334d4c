// A decoder layer's activations (memory.hpp, layer_activations()): what one micro-batch keeps
// from the layer's forward to its backward, and what recomputation rebuilds, per Korthikanti et
// al. 2022 extended to GQA, gated MLPs, flash attention, FP8 copies, MLA, MoE and LoRA.
#include "sim/memory/memory.hpp"

#include <algorithm>

#include "sim/cost/recompute_ops.hpp"
#include "sim/memory/micro_batch.hpp"
#include "sim/model/params.hpp"

namespace trainsim {

using memory_detail::d;
using memory_detail::kFp32;
using memory_detail::kMaskBytes;
using memory_detail::Shape;
using memory_detail::shape_of;

namespace {

// What the attention core keeps between forward and backward beyond Q, K, V and its output:
// a fused kernel (flash, flash-attn2) its softmax statistics (fp32 per query and head); the
// unfused backend the s x s probabilities, and with attention dropout their mask and the
// dropout's output (Korthikanti's 5as^2b).
double attention_core(const Model& model, const Plan& plan, const Shape& s) {
  const double heads = d(model.num_attention_heads);
  if (plan.attention_backend != AttentionBackend::kUnfused) return kFp32 * s.tokens * heads / s.t;
  const bool dropout = plan.attention_dropout > 0;
  const double per_element = kActBytes + (dropout ? kMaskBytes + kActBytes : 0.0);
  return per_element * heads * s.seq * s.tokens / s.t;
}

// Bytes an element of the tensors a layer keeps as a GEMM's input for its weight gradient.
// Transformer Engine keeps that input as it quantised it: in FP8 runs 1 byte an element (on Hopper
// the transposed copy its backward GEMM reads), in BF16 runs the tensor itself, 2 bytes
// (TransformerEngine#1764). Where another op keeps the BF16 tensor anyway (the attention output,
// which fused attention keeps for its own backward; an MoE layer's norm output, which the router
// keeps) the FP8 copy comes on top of it (TransformerEngine#1865).
struct GemmInputBytes {
  double alone;   // a tensor kept only as a GEMM's input
  double beside;  // the extra copy beside a BF16 tensor another op keeps
};

GemmInputBytes gemm_input_bytes(const Plan& plan) {
  if (plan.precision == Precision::kFP8) return {1.0, 1.0};
  return {kActBytes, 0.0};
}

// What a dense decoder layer's four linears keep as their weight gradients' inputs, per element:
// the QKV and MLP-up inputs (the norms' outputs), the output projection's copy beside the
// attention output, and the MLP-down input (the activation's output). Under LoRA every base
// weight is frozen and Transformer Engine keeps no linear's input (its backward needs one only
// for a weight that requires a gradient); an adapter keeps its own input in BF16, which beside
// linear_proj and linear_fc2 is the tensor the attention and the activation's output already
// are (nothing more), and beside linear_qkv and linear_fc1 the norm's output. The adapters' own
// rank-wide intermediates (a few columns a token) are not counted.
struct LinearInputs {
  double qkv, proj_beside, fc1, fc2;
};

LinearInputs linear_inputs(const Plan& plan, const GemmInputBytes& in) {
  if (!plan.lora()) return {in.alone, in.beside, in.alone, in.alone};
  const auto adapted = [&plan](LoraModule m) {
    return (plan.lora_target_modules & m) != 0 ? kActBytes : 0.0;
  };
  return {adapted(kLoraQkv), 0.0, adapted(kLoraFc1), adapted(kLoraFc2)};
}

// What a layer's MLP keeps: `mlp` in all, `expert_act` the routed experts' activation outputs
// (dropped with moe_act recomputation), `shared` the shared expert's.
struct MlpActivations {
  double mlp = 0, expert_act = 0, shared = 0;
};

MlpActivations mlp_activations(const Model& model, const Plan& plan, const Shape& s,
                               const GemmInputBytes& in, bool moe) {
  const double T = s.tokens;
  const double up = is_gated(model.ffn_kind) ? 2.0 : 1.0;
  MlpActivations a;
  // Split by TP: the MLP-up output (the activation's input, gate included) and the activation's
  // output (the down projection's input).
  if (!moe) {
    a.mlp = T * (up * kActBytes + in.alone) * d(model.ffn_hidden_size) / s.t;
    return a;
  }
  // The rows the GPU's experts compute (sim/cost/moe_ops.hpp): their gathered inputs, up
  // outputs and activations, for the busiest GPU.
  const auto& m = model.moe;
  const double etp = d(plan.expert_tp());
  const double rows = routed_expert_rows(layer_shape(model, plan, 0));
  const double f = d(m.expert_ffn_hidden_size) / etp;
  // The activation's output, weighted by the router's probabilities; after a plain (not gated)
  // activation Megatron-Core has no fused weighted kernel and keeps the unweighted output too,
  // the input of the multiplication by the probabilities.
  const double unweighted = up == 1.0 ? kActBytes : 0.0;
  a.expert_act = rows * (unweighted + in.alone) * f;
  // The shared expert beside them: a dense MLP's.
  a.shared = T * (up * kActBytes + in.alone) * d(m.shared_expert_ffn_hidden_size) / s.t;
  a.mlp = rows * (in.alone * s.h + up * kActBytes * f) + a.expert_act + a.shared;
  return a;
}

// What a layer's attention keeps beside its norms: `sharded` split by TP (Q and K for QK^T, V,
// the attention output, the output projection's input, with its FP8 copy; with QK-norm also Q
// and K before it, the norms' inputs); MLA's `latent` down-projection outputs and their norms'
// outputs (the up-projections' inputs, in FP8 runs as their FP8 copies; whole on every TP rank)
// and `up_projections`, what its up-projections and RoPE write (per head Q, K and V).
struct AttentionActivations {
  double sharded = 0, latent = 0, up_projections = 0;
};

AttentionActivations attention_activations(const Model& model, const Shape& s,
                                           const GemmInputBytes& in) {
  const double T = s.tokens;
  AttentionActivations a;
  std::int64_t attention = 2 * model.q_size() + 2 * model.kv_size();
  if (model.qk_norm && !model.mla.is_mla()) attention += model.q_size() + model.kv_size();
  if (model.mla.is_mla()) {
    const auto& m = model.mla;
    const std::int64_t qkv =
        2 * model.q_size() + model.num_attention_heads * (m.qk_nope_head_dim + m.v_head_dim);
    attention = qkv + model.v_size();
    a.up_projections = kActBytes * T * d(qkv) / s.t;
    // The latent norms run fused into the up-projections (Megatron-Core's layer-norm linear), so
    // their outputs are GEMM inputs; the rotary key is not normed (kept as written and as rotated).
    const double latents = d(m.q_lora_rank + m.kv_lora_rank);
    a.latent = T * ((kActBytes + in.alone) * latents + 2.0 * kActBytes * d(m.qk_rope_head_dim));
  }
  a.sharded = (kActBytes * d(attention) + in.beside * d(model.v_size())) * T / s.t;
  return a;
}

// What torchtitan's per-operator checkpointing keeps of a decoder layer (sim/cost/
// recompute_ops.hpp, op_recompute()): the layer's input (split by SP); the outputs of the
// matmuls it saves (op_checkpoint_matmuls: a Llama layer's Q and V, split by TP, its MLP's first
// up projection, split by TP, and in a gated MLP the down projection's output, a whole [tokens x
// h] on each TP rank, its partial sum before the reduction); the attention's output and softmax
// statistics; with SP the two reduce-scatters' outputs; and in an MoE layer the two all-to-alls'
// outputs over EP (the tokens the GPU receives for its experts, the busiest GPU's, and its own
// tokens' results back).
double op_checkpoint_saved(const Model& model, const Plan& plan, const Shape& s, double core,
                           bool moe) {
  const double T = s.tokens, e = kActBytes;
  double saved = e * T * s.h / s.r;
  const LayerShape shape = layer_shape(model, plan, 0, moe);
  for (const auto& mm : op_checkpoint_matmuls(shape)) {
    if (mm.saved) saved += e * mm.m * mm.n;
  }
  saved += e * T * d(model.v_size()) / s.t + core;
  if (plan.sequence_parallel()) saved += 2.0 * e * T * s.h / s.r;
  if (shape.is_moe() && shape.moe.ep > 1 && shape.moe.dispatcher == MoeDispatcher::kAllToAll) {
    const double routed = shape.sharded_tokens() * shape.moe.topk;
    saved += e * s.h * routed * (shape.moe.load + 1.0);
  }
  return saved;
}

}  // namespace

LayerActivations layer_activations(const Model& model, const Plan& plan, bool moe_layer) {
  const Shape s = shape_of(model, plan);
  const double T = s.tokens;
  const bool moe = model.moe.is_moe() && moe_layer;
  const GemmInputBytes in = gemm_input_bytes(plan);
  const LinearInputs linears = linear_inputs(plan, in);
  // The MLP's GEMM inputs: a dense layer's down projection's (an MoE layer's experts', as `in`:
  // LoRA takes no experts).
  const auto [mlp, expert_act, shared] =
      mlp_activations(model, plan, s, {linears.fc2, in.beside}, moe);

  // Replicated over TP (split by SP): the two norms' inputs, the QKV and MLP-up inputs (the norms'
  // outputs) and the two hidden dropout masks. MLA's two down-projections share their input, one
  // FP8 copy each; an MoE layer's router keeps its norm's output, the shared expert an FP8 copy.
  const double qkv_input = model.mla.is_mla() ? kActBytes : linears.qkv;
  const bool shared_expert = moe && model.moe.shared_expert_ffn_hidden_size > 0;
  const double mlp_input = !moe ? linears.fc1 : kActBytes + (shared_expert ? in.beside : 0.0);
  const double norm_outputs = (qkv_input + mlp_input) * T * s.h / s.r;
  double replicated = 2.0 * kActBytes * T * s.h + norm_outputs * s.r;
  // Sandwich norms (Grok-1): the attention and MLP outputs, their inputs.
  if (model.sandwich_norms) replicated += 2.0 * kActBytes * T * s.h;
  if (plan.hidden_dropout > 0) replicated += 2.0 * kMaskBytes * T * s.h;
  // A gated shared expert keeps its output for the gate's gradient (split by SP, as its input).
  if (shared_expert && model.moe.shared_expert_gate) replicated += kActBytes * T * s.h;
  const AttentionActivations att = attention_activations(model, s, {in.alone, linears.proj_beside});
  replicated += att.latent;
  const double sharded = att.sharded + mlp;
  const double core = attention_core(model, plan, s);
  const double all = replicated / s.r + sharded + core;

  LayerActivations a;
  switch (plan.recompute) {
    case Recompute::kNone:
      a.saved = all;
      break;
    case Recompute::kSelective: {
      // What the modules drop after the forward and rebuild before the backward.
      const auto on = [&plan](RecomputeModule m) { return (plan.recompute_modules & m) != 0; };
      double dropped = on(kRecomputeCoreAttn) ? core : 0.0;
      if (on(kRecomputeLayernorm)) dropped += norm_outputs;
      if (on(kRecomputeMlaUpProj)) dropped += att.up_projections;
      if (!moe && on(kRecomputeMlp)) dropped += mlp;
      if (moe && on(kRecomputeMoe)) {
        dropped += mlp;
      } else if (moe) {
        if (on(kRecomputeMoeAct)) dropped += expert_act;
        if (on(kRecomputeSharedExperts)) dropped += shared;
      }
      a.saved = all - dropped;
      a.recompute = dropped;
      break;
    }
    case Recompute::kFull:
      // Each layer keeps only its input; its backward rebuilds everything else.
      a.saved = kActBytes * T * s.h / s.r;
      a.recompute = all;
      break;
    case Recompute::kOp:
      // The rest of the layer comes back before its backward, at most what it keeps without
      // recomputation (as Transformer Engine's layers keep it: the whole layer's estimate).
      a.saved = op_checkpoint_saved(model, plan, s, core, moe);
      a.recompute = std::max(all - a.saved, 0.0);
      break;
  }
  return a;
}

}  // namespace trainsim
