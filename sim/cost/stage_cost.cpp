#include "sim/cost/stage_cost.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "sim/cost/fp8_amax.hpp"
#include "sim/cost/fp8_weights.hpp"
#include "sim/cost/lora.hpp"
#include "sim/cost/pass_groups.hpp"
#include "sim/cost/recompute_ops.hpp"
#include "sim/cost/tp_overlap.hpp"
#include "sim/cost/vocab_ops.hpp"
#include "sim/model/params.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/vocab.hpp"
#include "sim/platform/kernel_db.hpp"

namespace trainsim {

namespace {

// What every kernel of a plan's step is costed with: the platform, the calibrated factor on
// compute-bound kernels for the plan's GPU count (each kernel's precision is its shape's), the
// attention backend's factor on the database's fused attention, and the groups the overlapped TP
// and CP calls are priced on.
struct Costing {
  const Platform& platform;
  double compute_factor;
  double fp8_gemm_factor;
  double attention_factor;
  PassGroups groups;
  Costing(const Platform& p, const Plan& plan)
      : platform(p),
        compute_factor(compute_time_factor(p.calibration, plan.world_size())),
        fp8_gemm_factor(compute_time_factor(p.calibration, plan.world_size(), true)),
        attention_factor(plan.attention_backend == AttentionBackend::kFlashAttn2
                             ? p.flash_attn2_time_factor.value_or(1.0)
                             : 1.0),
        groups(p, plan) {}
};

// Each overlapped call's stall (tp_overlap.hpp) beside its kernel among the pass's kernels from
// `first` on (the block's), `count` times; a call whose kernel the pass lacks (a zero-bubble
// input-gradient pass without its weight gradients) stalls nothing.
void add_overlap_stalls(PassCost& pass, std::size_t first, const std::string& prefix,
                        const BlockPass& block, std::int64_t count, const Costing& costing) {
  for (const auto& o : block.overlaps) {
    if (!costing.groups.has(o.dim)) continue;
    double kernel_s = 0;  // the overlapped kernels' time per block pass
    bool found = false;
    for (const auto& kernel : o.kernels) {
      const std::string name = prefix + "." + kernel;
      const auto it =
          std::find_if(pass.kernels.begin() + static_cast<std::ptrdiff_t>(first),
                       pass.kernels.end(), [&](const KernelCost& k) { return k.name == name; });
      if (it == pass.kernels.end()) continue;
      found = true;
      kernel_s += it->time.seconds * static_cast<double>(it->count / count);
    }
    if (!found) continue;
    const double stall =
        overlap_stall(o.method, kernel_s, costing.groups.choose(o.dim, o.kind, o.bytes, 1).seconds,
                      costing.groups.size(o.dim));
    pass.stall_s[index_of(o.dim)] += stall * static_cast<double>(count);
    pass.seconds += stall * static_cast<double>(count);
  }
}

void add_pass(PassCost& pass, const std::string& prefix, const BlockPass& block, std::int64_t count,
              const Costing& costing) {
  const Platform& platform = costing.platform;
  const std::size_t first = pass.kernels.size();
  for (const auto& k : block.kernels) {
    KernelCost kc;
    kc.name = prefix + "." + k.name;
    kc.kind = k.kind;
    kc.count = count * k.launches;
    kc.flops = k.flops;
    kc.bytes = k.bytes;
    kc.shape = k.shape;
    kc.time = kernel_time(platform, k);
    if (k.kind == KernelKind::kGemm || k.kind == KernelKind::kAttention) {
      kc.time.seconds *= is_fp8_gemm(k.shape) ? costing.fp8_gemm_factor : costing.compute_factor;
    }
    if (k.kind == KernelKind::kAttention) kc.time.seconds *= costing.attention_factor;
    pass.seconds += kc.time.seconds * static_cast<double>(kc.count);
    pass.kernels.push_back(std::move(kc));
  }
  for (const auto& c : block.collectives) {
    add_collective(pass.collectives, {c.kind, c.dim, c.bytes * static_cast<double>(count),
                                      c.count * count, c.alongside});
  }
  add_overlap_stalls(pass, first, prefix, block, count, costing);
}

// The kernels of a pass that satisfy `keep`, with or without the pass's collectives.
template <typename Keep>
BlockPass filtered(const BlockPass& pass, Keep keep, bool with_collectives) {
  BlockPass out;
  for (const auto& k : pass.kernels) {
    if (keep(k)) out.kernels.push_back(k);
  }
  if (with_collectives) {
    out.collectives = pass.collectives;
    out.overlaps = pass.overlaps;
  }
  return out;
}

}  // namespace

double block_output_bytes(const Block& block, const LayerShape& shape) {
  switch (block.kind) {
    case BlockKind::kMtp:
      return static_cast<double>(block.layer + 2) * shape.sharded_tokens() * shape.hidden *
             shape.act_bytes;
    case BlockKind::kLmHead:
      return shape.tokens * shape.vocab * shape.act_bytes;
    case BlockKind::kCast:
    case BlockKind::kLoss:
      return shape.tokens * shape.vocab * 4.0;
    default:
      // Hidden states; with sequence parallelism each rank sends its 1/tp of the sequence.
      return shape.sharded_tokens() * shape.hidden * shape.act_bytes;
  }
}

std::int64_t block_runs(BlockKind kind, const Model& model) {
  const bool per_loss =
      kind == BlockKind::kLmHead || kind == BlockKind::kCast || kind == BlockKind::kLoss;
  return per_loss ? 1 + model.mtp_layers : 1;
}

BlockCost block_cost(const Model& model, const Platform& platform, const Plan& plan,
                     BlockKind kind) {
  const std::int64_t vocab = padded_vocab(model.vocab_size, plan.vocab_multiple(), plan.tp);
  const LayerShape shape = layer_shape(model, plan, vocab);
  BlockCost c;
  const Costing costing(platform, plan);
  const std::int64_t runs = block_runs(kind, model);
  const BlockPasses passes = block_passes(kind, shape);
  add_pass(c.forward, to_string(kind), passes.forward, runs, costing);
  add_pass(c.backward, to_string(kind), passes.backward, runs, costing);
  if (kind == BlockKind::kMtp) {
    // The module's decoder layer.
    const LayerShape layer = layer_shape(model, plan, vocab, mtp_layer_is_moe(model));
    const BlockPasses decoder = block_passes(BlockKind::kDecoder, layer);
    add_pass(c.forward, "decoder", decoder.forward, 1, costing);
    add_pass(c.backward, "decoder", decoder.backward, 1, costing);
  }
  return c;
}

KernelTime kernel_time(const Platform& platform, const KernelSpec& kernel) {
  if (platform.kernel_db) {
    if (auto hit = platform.kernel_db->lookup(kernel.shape)) {
      TimeSource source = TimeSource::kInterpolated;
      if (hit->match == KernelDbMatch::kExact) source = TimeSource::kMeasured;
      if (hit->match == KernelDbMatch::kNearest) source = TimeSource::kNearest;
      if (platform.kernel_db->kind() == KernelDbKind::kPublished) source = TimeSource::kPublished;
      return {hit->seconds, source, hit->spread};
    }
  }
  // A GEMM runs at the rate of its own operands (an FP8 plan keeps the LM head in BF16); every
  // other kernel is BF16.
  const auto* gemm = std::get_if<GemmShape>(&kernel.shape);
  const Precision precision =
      gemm && gemm->dtype == DType::kFP8 ? Precision::kFP8 : Precision::kBF16;
  return roofline_time(platform, precision, kernel.kind, kernel.flops, kernel.bytes);
}

namespace {

// A stage's decoder layers by kind: a mixture-of-experts model's MoE layers and its dense ones
// (a dense model's layers are all dense), each with global or local attention.
struct DecoderKinds {
  std::int64_t moe = 0;
  std::int64_t dense = 0;
  std::int64_t moe_local = 0;
  std::int64_t dense_local = 0;
};

// The stage's decoder layers by kind; with `recomputed`, only those full recomputation takes.
DecoderKinds decoder_kinds(const Model& model, const Partition& partition, std::int64_t stage,
                           const Plan* recomputed = nullptr) {
  DecoderKinds k;
  const auto& range = partition.stages[static_cast<std::size_t>(stage)];
  std::int64_t index = 0;
  for (auto i = range.begin; i < range.end; ++i) {
    const Block& b = partition.blocks[static_cast<std::size_t>(i)];
    if (b.kind != BlockKind::kDecoder) continue;
    if (recomputed && !recomputed->fully_recomputes(index++)) continue;
    const bool local = is_local_attention_layer(model, b.layer);
    if (is_moe_layer(model, b.layer)) {
      ++(local ? k.moe_local : k.moe);
    } else {
      ++(local ? k.dense_local : k.dense);
    }
  }
  return k;
}

// The passes of `count` blocks of one kind and shape, with what --recompute re-runs (full
// recomputation: `recomputed` of them), and on a stage that `defers` the LM head's weight
// gradient (--defer-embedding-wgrad-compute and the LM head here) the backward without it and
// the flush's part.
void add_block_passes(StageCost& sc, BlockKind kind, const LayerShape& shape, std::int64_t count,
                      std::int64_t recomputed, const Plan& plan, const Costing& costing,
                      bool defers) {
  if (count == 0) return;
  const char* prefix = to_string(kind);
  const auto [fwd, bwd] = block_passes(kind, shape);
  add_pass(sc.forward, prefix, fwd, count, costing);
  add_pass(sc.first_forward, prefix, fp8_weight_casts(fwd, plan.fp8_param_gather), count, costing);
  add_pass(sc.backward, prefix, bwd, count, costing);
  add_pass(sc.backward_input, prefix,
           filtered(
               bwd, [](const KernelSpec& k) { return !is_weight_gradient(k); }, true),
           count, costing);
  const BlockPass weight = filtered(bwd, is_weight_gradient, false);
  add_pass(sc.backward_weight, prefix, weight, count, costing);
  if (defers) {
    const bool head = kind == BlockKind::kLmHead;
    add_pass(sc.backward_deferring_lm_head_wgrad, prefix,
             head ? lm_head_deferring_backward(shape) : bwd, count, costing);
    if (head) add_pass(sc.lm_head_wgrad, prefix, lm_head_flush(shape), count, costing);
  }
  if (kind == BlockKind::kDecoder && plan.recompute == Recompute::kFull) {
    if (recomputed > 0) add_pass(sc.recompute, prefix, fwd, recomputed, costing);
  } else if (kind == BlockKind::kDecoder && plan.recompute == Recompute::kSelective) {
    add_pass(sc.recompute, prefix, selective_recompute(fwd, shape, plan), count, costing);
  } else if (kind == BlockKind::kDecoder && plan.recompute == Recompute::kOp) {
    add_pass(sc.recompute, prefix, op_recompute(fwd, shape), count, costing);
  }
}

// The stage's first forward: the weights' quantisation that add_block_passes gathered in it,
// then the whole forward (its calls and stalls); left empty where there is nothing to cast.
void complete_first_forward(StageCost& sc) {
  if (sc.first_forward.kernels.empty()) return;
  PassCost first = sc.forward;
  first.seconds += sc.first_forward.seconds;
  first.kernels.insert(first.kernels.begin(), sc.first_forward.kernels.begin(),
                       sc.first_forward.kernels.end());
  sc.first_forward = std::move(first);
}

// The optimizer step over this GPU's parameters, or its 1/(dp x cp) shard of them (ZeRO-1 up),
// and of its experts its 1/edp shard (with several distributed-optimizer instances, of one
// instance's ranks).
void add_optimizer(StageCost& sc, const Plan& plan, const Costing& costing) {
  const bool sharded = plan.distributed_optimizer();
  const auto dense = static_cast<double>(sc.trained_params_per_gpu() - sc.expert_params_per_gpu);
  const auto experts = static_cast<double>(sc.expert_params_per_gpu);
  const double p = dense / static_cast<double>(sharded ? plan.optimizer_shards() : 1) +
                   experts / static_cast<double>(sharded ? plan.expert_optimizer_shards() : 1);
  BlockPass opt;
  const auto shard = static_cast<std::int64_t>(std::llround(p));
  opt.kernels.push_back(optimizer_kernel("grad_norm", "grad_norm", shard));
  opt.kernels.push_back(optimizer_kernel("adam", kind_of(plan.optimizer_state).adam_op, shard));
  add_pass(sc.optimizer, "optimizer", opt, 1, costing);
}

// A stage's passes, its blocks in model order; decoder kernels are costed once per kind (`shape`
// for a mixture-of-experts model's MoE layers, `dense_shape` for dense ones) and repeated per
// layer.
void add_stage_passes(StageCost& sc, const Model& model, const Plan& plan,
                      const Partition& partition, std::int64_t s, const LayerShape& shape,
                      const LayerShape& dense_shape, const Costing& costing) {
  const DecoderKinds decoders = decoder_kinds(model, partition, s);
  const DecoderKinds recomputed = decoder_kinds(model, partition, s, &plan);
  bool decoders_added = false;
  const bool defers = plan.defer_embedding_wgrad_compute && partition.holds(s, BlockKind::kLmHead);
  const auto add = [&](BlockKind kind, const LayerShape& of, std::int64_t count,
                       std::int64_t full = -1) {
    add_block_passes(sc, kind, of, count, full < 0 ? count : full, plan, costing, defers);
  };
  const auto& range = partition.stages[static_cast<std::size_t>(s)];
  for (auto i = range.begin; i < range.end; ++i) {
    const auto kind = partition.blocks[static_cast<std::size_t>(i)].kind;
    if (kind == BlockKind::kMtp) {
      add(kind, shape, 1);
      LayerShape layer = mtp_layer_is_moe(model) ? shape : dense_shape;
      layer.tp_comm_overlap = mtp_layer_tp_overlap(model, plan);
      add(BlockKind::kDecoder, layer, 1);
    } else if (kind != BlockKind::kDecoder) {
      add(kind, shape, block_runs(kind, model));
    } else if (!decoders_added) {
      decoders_added = true;
      // Dense layers first (a pass's collectives keep the order of their first kind).
      add(kind, dense_shape, decoders.dense, recomputed.dense);
      add(kind, with_local_attention(model, dense_shape), decoders.dense_local,
          recomputed.dense_local);
      add(kind, shape, decoders.moe, recomputed.moe);
      add(kind, with_local_attention(model, shape), decoders.moe_local, recomputed.moe_local);
    }
  }
}

}  // namespace

CostModel compute_costs(const Model& model, const Platform& platform, const Plan& plan,
                        const Partition& partition) {
  CostModel cm;
  cm.padded_vocab = padded_vocab(model.vocab_size, plan.vocab_multiple(), plan.tp);
  // A mixture-of-experts model's MoE layers and its dense layers (a dense model's every layer).
  const LayerShape shape = layer_shape(model, plan, cm.padded_vocab);
  const LayerShape dense_shape = layer_shape(model, plan, cm.padded_vocab, false);
  const Costing costing(platform, plan);

  // What an empty stage passes on: the hidden states it received.
  double message = block_output_bytes(Block{BlockKind::kDecoder}, shape);
  for (std::int64_t s = 0; s < partition.num_stages(); ++s) {
    StageCost sc;
    add_stage_passes(sc, model, plan, partition, s, shape, dense_shape, costing);
    if (const Block* last = partition.last_block(s)) message = block_output_bytes(*last, shape);
    sc.p2p_bytes = message;
    const StageParams held = stage_params(model, plan, partition, s, cm.padded_vocab);
    sc.params = held.params;
    sc.params_per_gpu = held.per_gpu;
    sc.expert_params_per_gpu = held.expert_per_gpu;
    sc.gemm_params_per_gpu = held.gemm_per_gpu;
    if (plan.lora()) {
      // Frozen: no embedding or norm gradients to synchronise; the adapters' reduce over DP.
      const DecoderKinds decoders = decoder_kinds(model, partition, s);
      sc.lora = true;
      sc.lora_params_per_gpu =
          (decoders.dense + decoders.dense_local) * lora_params_per_layer(shape);
    } else {
      sc.embedding_sync_bytes =
          static_cast<double>(held.synced_embedding_per_gpu) * grad_reduce_bytes(plan);
      sc.tp_sync_bytes =
          static_cast<double>(held.tp_partial_grad_per_gpu) * grad_reduce_bytes(plan);
    }
    sc.grad_bytes = static_cast<double>(sc.trained_params_per_gpu()) * grad_reduce_bytes(plan);
    sc.expert_bias_sync_bytes = static_cast<double>(held.expert_bias_counts) * kExpertBiasBytes;
    if (plan.fp8_recipe == Fp8Recipe::kDelayed) add_amax_reductions(sc);
    complete_first_forward(sc);  // after the forward's amax reduction joined it
    add_optimizer(sc, plan, costing);
    cm.stages.push_back(std::move(sc));
  }
  return cm;
}

std::vector<std::int64_t> embedding_sync_stages(const CostModel& costs, std::int64_t pp) {
  std::vector<std::int64_t> out;
  for (std::int64_t s = 0; s < pp; ++s) {
    for (auto v = s; v < static_cast<std::int64_t>(costs.stages.size()); v += pp) {
      if (costs.stages[static_cast<std::size_t>(v)].embedding_sync_bytes > 0) {
        out.push_back(s);
        break;
      }
    }
  }
  return out;
}

TimeSpread kernel_spread(const CostModel& costs) {
  double weight = 0, p10 = 0, p90 = 0;
  for (const auto& stage : costs.stages) {
    for (const PassCost* pass : {&stage.forward, &stage.backward, &stage.recompute}) {
      for (const auto& k : pass->kernels) {
        const TimeSource src = k.time.source;
        if (src != TimeSource::kMeasured && src != TimeSource::kInterpolated &&
            src != TimeSource::kNearest) {
          continue;
        }
        const double w = static_cast<double>(k.count) * k.time.seconds;
        weight += w;
        p10 += w * k.time.spread.p10;
        p90 += w * k.time.spread.p90;
      }
    }
  }
  if (weight <= 0) return {};
  return {p10 / weight, p90 / weight};
}

}  // namespace trainsim
