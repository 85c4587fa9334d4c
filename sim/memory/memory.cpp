#include "sim/memory/memory.hpp"

#include <algorithm>

#include "sim/memory/kept_buffers.hpp"
#include "sim/model/params.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {

namespace {

constexpr double kTokenIdBytes = 8;  // int64 token ids
constexpr double kMaskBytes = 1;     // dropout masks
constexpr double kFp32 = 4;

double d(std::int64_t v) {
  return static_cast<double>(v);
}

// Tokens of one micro-batch on one GPU, and the divisor of the tensors that tensor parallelism
// leaves replicated (sequence parallelism splits them too). Context parallelism keeps 1/cp of
// every sequence's tokens, and so of every activation, on each GPU.
struct Shape {
  double tokens;  // b * s / cp
  double seq;
  double h;
  double t;
  double r;  // t with sequence parallelism, else 1
};

Shape shape_of(const Model& model, const Plan& plan) {
  const double t = d(plan.tp);
  return {d(plan.mbs) * d(plan.seq_len) / d(plan.cp), d(plan.seq_len), d(model.hidden_size), t,
          plan.sp ? t : 1.0};
}

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

}  // namespace

ModelState model_state(std::int64_t params_per_gpu, std::int64_t zero, std::int64_t dp,
                       bool bf16_grads) {
  const double p = d(params_per_gpu);
  const double shard = 1.0 / d(dp);
  ModelState m;
  m.weights = kWeightBytes * p * (zero >= 3 ? shard : 1.0);
  // BF16 gradients: the optimizer steps on an fp32 copy of the part it updates (Megatron-LM's
  // "fp16 param, fp16 grads": 20 B a parameter, 4 + 16 / dp with the distributed optimizer).
  const double stepped = zero >= 1 ? shard : 1.0;
  m.gradients = bf16_grads ? kWeightBytes * p * (zero >= 2 ? shard : 1.0) + kGradBytes * p * stepped
                           : kGradBytes * p * (zero >= 2 ? shard : 1.0);
  m.master_weights = kMasterBytes * p * (zero >= 1 ? shard : 1.0);
  m.optimizer = kOptimizerBytes * p * (zero >= 1 ? shard : 1.0);
  return m;
}

namespace {

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
  }
  return a;
}

namespace {

// What one stage's blocks keep are priced with: the micro-batch's shape, the logits elements per
// GPU (of the main model and of each multi-token-prediction module: `runs`), each decoder kind's
// activations.
struct BlockInputs {
  const Model& model;
  const Plan& plan;
  Shape s;
  double runs;
  double logits;
  double vocab_rows;  // the padded vocabulary's rows on one TP rank
  LayerActivations moe_layer;
  LayerActivations dense_layer;
  BlockInputs(const Model& m, const Plan& p, std::int64_t padded_vocab)
      : model(m),
        plan(p),
        s(shape_of(m, p)),
        runs(d(1 + m.mtp_layers)),
        logits(s.tokens * d(padded_vocab) / s.t * runs),
        vocab_rows(d(padded_vocab) / s.t),
        moe_layer(layer_activations(m, p, true)),
        dense_layer(layer_activations(m, p, false)) {}
  double hidden() const { return kActBytes * s.tokens * s.h / s.r; }  // one hidden state
};

// The LM head keeps its input, once for the main model and once for each multi-token-prediction
// module. Deferring its weight gradient, a backward keeps that input and the BF16 gradient of the
// logits to the flush (Megatron-LM's embedding_activation_buffer and grad_output_buffer).
void add_lm_head(PassFootprint& f, const BlockInputs& in) {
  f.saved += in.hidden() * in.runs;
  if (in.plan.defer_embedding_wgrad_compute) {
    f.deferred += in.hidden() * in.runs + kActBytes * in.logits;
    f.deferrals = in.plan.deferred_lm_head_wgrads();
  }
}

// Vocabulary-parallel cross-entropy: an fp32 copy of the logits turned into the softmax in place
// and kept for the backward; the BF16 logits live beside it while the loss runs (the fused one's
// second fp32 tensor too: Plan::cross_entropy_loss_fusion), and the BF16 logits gradient beside it
// in the backward. With multi-token prediction every module's softmax is kept; their BF16 logits
// and gradients come one at a time.
void add_loss(PassFootprint& f, const BlockInputs& in, bool holds_lm_head) {
  f.saved += kFp32 * in.logits;
  const double fused = in.plan.cross_entropy_loss_fusion ? kFp32 * in.logits / in.runs : 0.0;
  if (holds_lm_head) {
    f.forward_transient = std::max(f.forward_transient, kActBytes * in.logits / in.runs + fused);
  } else {
    f.saved += kActBytes * in.logits;  // received from the previous stage, held
    f.forward_transient = std::max(f.forward_transient, fused);
  }
  f.backward_transient = std::max(f.backward_transient, kActBytes * in.logits / in.runs);
}

// Adds what `block` keeps to `f`; returns its parameters per GPU (for ZeRO's working set).
double add_block(PassFootprint& f, const BlockInputs& in, const Block& block, bool holds_lm_head) {
  const Model& model = in.model;
  const double T = in.s.tokens;
  switch (block.kind) {
    case BlockKind::kEmbedding:
      // Token ids (Megatron's estimator: "input to embedding"), and the dropout mask.
      f.saved += kTokenIdBytes * T;
      if (in.plan.hidden_dropout > 0) f.saved += kMaskBytes * T * in.s.h / in.s.r;
      return in.vocab_rows * in.s.h + d(count_params(model).position_embedding);
    case BlockKind::kDecoder:
    case BlockKind::kMtp: {
      const bool moe = block.kind == BlockKind::kMtp ? mtp_layer_is_moe(model)
                                                     : is_moe_layer(model, block.layer);
      const LayerActivations& layer = moe ? in.moe_layer : in.dense_layer;
      // A multi-token-prediction module's decoder layer, and its token ids ahead, the two norms'
      // inputs, the projection's input (both norms' outputs) and the final norm's input.
      f.saved += block.kind == BlockKind::kMtp ? layer.saved + kTokenIdBytes * T + 5.0 * in.hidden()
                                               : layer.saved;
      f.backward_transient = std::max(f.backward_transient, layer.recompute);
      return d(layer_params_per_rank(model, in.plan, moe));
    }
    case BlockKind::kFinalNorm:
      f.saved += in.hidden();  // the norm's input
      return 0;
    case BlockKind::kLmHead:
      add_lm_head(f, in);
      return in.vocab_rows * in.s.h;
    case BlockKind::kCast:
      return 0;  // its fp32 output is the loss's input, counted there
    case BlockKind::kLoss:
      add_loss(f, in, holds_lm_head);
      return 0;
  }
  return 0;
}

}  // namespace

PassFootprint stage_footprint(const Model& model, const Plan& plan, const Partition& partition,
                              std::int64_t stage, std::int64_t padded_vocab) {
  const BlockInputs in(model, plan, padded_vocab);
  const bool holds_lm_head = partition.holds(stage, BlockKind::kLmHead);
  PassFootprint f;
  double largest_block = 0;  // parameters per GPU of the stage's largest block (ZeRO 2/3)
  const auto& range = partition.stages[static_cast<std::size_t>(stage)];
  for (auto i = range.begin; i < range.end; ++i) {
    const Block& block = partition.blocks[static_cast<std::size_t>(i)];
    largest_block = std::max(largest_block, add_block(f, in, block, holds_lm_head));
  }
  // ZeRO working set: one block's full gradients before their reduce-scatter (stage >= 2); the
  // gathered weights of the running and the prefetched block (stage 3).
  if (plan.zero >= 2) {
    f.backward_transient += grad_reduce_bytes(plan) * largest_block;
  }
  if (plan.zero >= 3) {
    f.forward_transient += 2.0 * kWeightBytes * largest_block;
    f.backward_transient += 2.0 * kWeightBytes * largest_block;
  }
  return f;
}

double device_bytes(const RuntimeMemory& runtime, double allocated) {
  return allocated * (1.0 + runtime.fragmentation) + runtime.reserved;
}

std::int64_t MemoryModel::worst_stage() const {
  std::int64_t worst = 0;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    if (stages[s].peak_bytes > stages[static_cast<std::size_t>(worst)].peak_bytes) {
      worst = static_cast<std::int64_t>(s);
    }
  }
  return worst;
}

bool MemoryModel::fits() const {
  for (const auto& s : stages) {
    if (s.peak_bytes > capacity) return false;
  }
  return true;
}

MemoryModel compute_memory(const Model& model, const Platform& platform, const Plan& plan,
                           const Partition& partition, const CostModel& costs) {
  MemoryModel mm;
  mm.capacity = platform.gpu.memory_bytes;
  // The programs the task graph replays: each compute step names its model chunk, and each
  // chunk (virtual stage chunk x pp + stage) has its own footprint.
  ScheduleConfig config = schedule_config(plan);
  config.microbatches = std::max<std::int64_t>(config.microbatches, 1);
  const std::int64_t pp = partition.physical_stages();
  for (std::int64_t s = 0; s < pp; ++s) {
    StageMemory sm;
    std::int64_t params = 0, experts = 0, gemm_params = 0, adapters = 0;
    double router_buffers = 0;  // the expert biases and their tokens-per-expert counts
    bool lm_head = false;
    std::vector<PassFootprint> footprints;
    for (std::int64_t c = 0; c < partition.chunks; ++c) {
      const auto v = c * pp + s;
      lm_head = lm_head || partition.holds(v, BlockKind::kLmHead);
      params += costs.stages[static_cast<std::size_t>(v)].params_per_gpu;
      experts += costs.stages[static_cast<std::size_t>(v)].expert_params_per_gpu;
      gemm_params += costs.stages[static_cast<std::size_t>(v)].gemm_params_per_gpu;
      adapters += costs.stages[static_cast<std::size_t>(v)].lora_params_per_gpu;
      router_buffers += 2 * costs.stages[static_cast<std::size_t>(v)].expert_bias_sync_bytes;
      footprints.push_back(stage_footprint(model, plan, partition, v, costs.padded_vocab));
    }
    // Experts split by EP share their state over the expert-data-parallel ranks; with several
    // distributed-optimizer instances, over one instance's share of them.
    if (plan.lora()) {
      // LoRA: the frozen weights alone (no gradients, master copies or moments), the adapters'
      // whole state beside them.
      sm.state.weights = kWeightBytes * d(params);
      sm.state +=
          model_state(adapters, plan.zero, plan.optimizer_shards(), plan.grad_reduce_in_bf16);
    } else {
      sm.state = model_state(params - experts, plan.zero, plan.optimizer_shards(),
                             plan.grad_reduce_in_bf16);
      sm.state +=
          model_state(experts, plan.zero, plan.expert_optimizer_shards(), plan.grad_reduce_in_bf16);
    }
    // FP8 (Transformer Engine): each GEMM weight is also held quantised, with its transpose for
    // the data gradient (1 byte each), cached from the first micro-batch to the step's end. With
    // FP8 primary weights (--fp8-param-gather) the quantised weight replaces the BF16 one.
    if (plan.precision == Precision::kFP8 && !plan.fp8_param_gather) {
      sm.state.weights += kFp8WeightCopyBytes * d(gemm_params);
    }
    sm.runtime_allocated =
        platform.memory.allocated + extra_cublas_workspaces(platform, plan, experts > 0) +
        megatron_global_buffers(model, plan, lm_head, experts > 0) + router_buffers;
    sm.footprint = footprints.front();
    const auto steps = compute_steps(stage_program(config, s));
    sm.timeline = walk_activations(steps, footprints, sm.base());
    sm.peak_allocated = sm.timeline.peak;
    sm.peak_bytes = device_bytes(platform.memory, sm.peak_allocated);
    mm.stages.push_back(std::move(sm));
  }
  return mm;
}

}  // namespace trainsim
