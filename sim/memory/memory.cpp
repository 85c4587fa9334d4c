#include "sim/memory/memory.hpp"

#include <algorithm>

#include "sim/memory/kept_buffers.hpp"
#include "sim/memory/micro_batch.hpp"
#include "sim/model/params.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {

using memory_detail::d;
using memory_detail::kFp32;
using memory_detail::kMaskBytes;
using memory_detail::kTokenIdBytes;
using memory_detail::Shape;
using memory_detail::shape_of;

ModelState model_state(std::int64_t params_per_gpu, std::int64_t zero, std::int64_t dp,
                       bool bf16_grads, OptimizerState state) {
  const double p = d(params_per_gpu);
  const double shard = 1.0 / d(dp);
  ModelState m;
  m.weights = kWeightBytes * p * (zero >= 3 ? shard : 1.0);
  // BF16 gradients: the optimizer steps on an fp32 copy of the part it updates (Megatron-LM's
  // "fp16 param, fp16 grads": 20 B a parameter, 4 + 16 / dp with the distributed optimizer).
  const double stepped = zero >= 1 ? shard : 1.0;
  m.gradients = bf16_grads ? kWeightBytes * p * (zero >= 2 ? shard : 1.0) + kGradBytes * p * stepped
                           : kGradBytes * p * (zero >= 2 ? shard : 1.0);
  m.master_weights = kind_of(state).master_bytes * p * (zero >= 1 ? shard : 1.0);
  m.optimizer = kind_of(state).moment_bytes * p * (zero >= 1 ? shard : 1.0);
  return m;
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
  // A layer that partial full recomputation leaves out keeps its activations (computed only for
  // such a plan: the memory model runs for every plan a sweep prices).
  bool partial;
  LayerActivations moe_kept;
  LayerActivations dense_kept;
  BlockInputs(const Model& m, const Plan& p, std::int64_t padded_vocab)
      : model(m),
        plan(p),
        s(shape_of(m, p)),
        runs(d(1 + m.mtp_layers)),
        logits(s.tokens * d(padded_vocab) / s.t * runs),
        vocab_rows(d(padded_vocab) / s.t),
        moe_layer(layer_activations(m, p, true)),
        dense_layer(layer_activations(m, p, false)),
        partial(p.partially_recomputes()),
        moe_kept(partial ? layer_activations(m, recomputing(p, Recompute::kNone), true)
                         : LayerActivations{}),
        dense_kept(partial ? layer_activations(m, recomputing(p, Recompute::kNone), false)
                           : LayerActivations{}) {}
  double hidden() const { return kActBytes * s.tokens * s.h / s.r; }  // one hidden state
};

// The LM head keeps its input, once for the main model and once for each multi-token-prediction
// module; frozen (LoRA) it keeps none (Megatron-Core's LinearWithFrozenWeight saves the weight
// alone). Deferring its weight gradient, a backward keeps that input and the BF16 gradient of the
// logits to the flush (Megatron-LM's embedding_activation_buffer and grad_output_buffer).
void add_lm_head(PassFootprint& f, const BlockInputs& in) {
  if (!in.plan.lora()) f.saved += in.hidden() * in.runs;
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

// What a decoder layer keeps to its backward: what the plan's recomputation leaves it (its own),
// all its activations (a layer that partial full recomputation leaves out), or nothing (a layer
// inside a uniform group, whose first layer's input serves the group).
enum class Keeps { kOwn, kWhole, kNothing };

// Adds what `block` keeps to `f`; returns its parameters per GPU (for ZeRO's working set).
double add_block(PassFootprint& f, const BlockInputs& in, const Block& block, bool holds_lm_head,
                 Keeps keeps) {
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
      const LayerActivations& layer = keeps == Keeps::kWhole
                                          ? (moe ? in.moe_kept : in.dense_kept)
                                          : (moe ? in.moe_layer : in.dense_layer);
      const double saved = keeps == Keeps::kNothing ? 0.0 : layer.saved;
      // A multi-token-prediction module's decoder layer, and its token ids ahead, the two norms'
      // inputs, the projection's input (both norms' outputs) and the final norm's input.
      f.saved +=
          block.kind == BlockKind::kMtp ? saved + kTokenIdBytes * T + 5.0 * in.hidden() : saved;
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
  std::int64_t decoders = 0;  // the stage's decoder layers so far
  double group = 0;           // what the current uniform group's layers rebuild together
  for (auto i = range.begin; i < range.end; ++i) {
    const Block& block = partition.blocks[static_cast<std::size_t>(i)];
    Keeps keeps = Keeps::kOwn;
    if (block.kind == BlockKind::kDecoder) {
      if (in.partial && !plan.fully_recomputes(decoders)) keeps = Keeps::kWhole;
      if (plan.recompute_group() > 1) {
        // Uniform groups of N: the group's first layer keeps its input, the others nothing, and
        // the group's backward rebuilds all its layers at once.
        const bool first = decoders % plan.recompute_group() == 0;
        const bool moe = is_moe_layer(model, block.layer);
        group = (first ? 0.0 : group) + (moe ? in.moe_layer : in.dense_layer).recompute;
        f.backward_transient = std::max(f.backward_transient, group);
        if (!first) keeps = Keeps::kNothing;
      }
      ++decoders;
    }
    largest_block = std::max(largest_block, add_block(f, in, block, holds_lm_head, keeps));
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

MemoryFit MemoryModel::fit() const {
  MemoryFit worst = MemoryFit::kFits;
  for (const StageMemory& s : stages) {
    worst = std::max(worst, memory_fit(s.peak_bytes, s.peak_unfragmented_bytes, capacity));
  }
  return worst;
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
      sm.state += model_state(adapters, plan.zero, plan.optimizer_shards(),
                              plan.grad_reduce_in_bf16, plan.optimizer_state);
    } else {
      sm.state = model_state(params - experts, plan.zero, plan.optimizer_shards(),
                             plan.grad_reduce_in_bf16, plan.optimizer_state);
      sm.state += model_state(experts, plan.zero, plan.expert_optimizer_shards(),
                              plan.grad_reduce_in_bf16, plan.optimizer_state);
    }
    // FP8 (Transformer Engine): each GEMM weight is also held quantised, with its transpose for
    // the data gradient (1 byte each), cached from the first micro-batch to the step's end. With
    // FP8 primary weights (--fp8-param-gather) the quantised weight replaces the BF16 one.
    if (plan.precision == Precision::kFP8 && !plan.fp8_param_gather) {
      sm.state.weights += kFp8WeightCopyBytes * d(gemm_params);
    }
    // --optimizer-state bf16 steps BF16 weights as they are, but keeps a BF16 master copy of FP8
    // primary weights (NeMo's store_params, the weights' dtype not the optimizer's), sharded.
    if (plan.optimizer_state == OptimizerState::kBf16 && plan.fp8_param_gather) {
      const double dense_gemm = d(std::max<std::int64_t>(gemm_params - experts, 0));
      sm.state.master_weights +=
          kWeightBytes * (dense_gemm / d(plan.optimizer_shards()) +
                          d(std::min(experts, gemm_params)) / d(plan.expert_optimizer_shards()));
    }
    sm.runtime_allocated =
        platform.memory.allocated + extra_cublas_workspaces(platform, plan, experts > 0) +
        megatron_global_buffers(model, plan, lm_head, experts > 0) + router_buffers;
    sm.footprint = footprints.front();
    const auto steps = compute_steps(stage_program(config, s));
    sm.timeline = walk_activations(steps, footprints, sm.base());
    sm.peak_allocated = sm.timeline.peak;
    sm.peak_bytes = device_bytes(platform.memory, sm.peak_allocated);
    sm.peak_unfragmented_bytes = sm.peak_allocated + platform.memory.reserved;
    mm.stages.push_back(std::move(sm));
  }
  return mm;
}

}  // namespace trainsim
