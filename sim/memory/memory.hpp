#pragma once
// Memory per GPU of every pipeline stage over a training step. Three parts:
//  - model state: BF16 weights, fp32 main gradients, fp32 master weights and Adam moments, of the
//    parameters the stage's GPU holds (its TP shard, padded vocabulary, embedding and LM head where
//    the partition puts them), sharded over data parallelism by ZeRO stage (--zero);
//  - activations: what each micro-batch keeps from its forward to its backward, per Korthikanti
//    et al. 2022 (Table 2) extended to GQA, gated MLPs and flash attention, under no, selective or
//    full recomputation, with or without sequence parallelism; the logits and the loss's fp32
//    softmax on the stage with the loss;
//  - the runtime terms: buffers the caching allocator counts beyond the above (the platform's
//    fitted overhead, the software stack's kept buffers, the routers' expert biases and their
//    counts), memory outside it (CUDA context, NCCL), and fragmentation.
// Activations are walked over the stage's own program (sim/memory/timeline.hpp), so the number of
// micro-batches in flight comes from the schedule itself, not from a formula per schedule.
#include <cstdint>
#include <vector>

#include "sim/cost/stage_cost.hpp"
#include "sim/memory/memory_fit.hpp"
#include "sim/memory/timeline.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

/// Bytes per element of the model state (mixed-precision Adam as Megatron-LM runs it).
inline constexpr double kWeightBytes = 2;  // BF16 weights used by forward and backward
/// FP8 runs: an E4M3 copy of each GEMM weight and of its transpose (Transformer Engine).
inline constexpr double kFp8WeightCopyBytes = 2;
inline constexpr double kGradBytes = 4;  // fp32 main gradients (BF16: kWeightBytes)
// The master weights' and Adam moments' bytes are the optimizer state's: kind_of(OptimizerState).
/// Bytes per element of the activations and of the buffers that hold them: BF16.
inline constexpr double kActBytes = 2;

/// Model state per GPU, bytes.
struct ModelState {
  double weights = 0;
  double gradients = 0;
  double master_weights = 0;
  double optimizer = 0;
  double total() const { return weights + gradients + master_weights + optimizer; }
  ModelState& operator+=(const ModelState& o) {
    weights += o.weights;
    gradients += o.gradients;
    master_weights += o.master_weights;
    optimizer += o.optimizer;
    return *this;
  }
};

/// The model state of `params_per_gpu` parameters under ZeRO stage `zero` over `dp` ranks
/// sharing them (Plan::optimizer_shards):
/// 1 (Megatron's distributed optimizer) shards master weights and moments, 2 also gradients,
/// 3 also weights. `bf16_grads` (--grad-reduce-in-bf16): BF16 gradients, and the fp32 copy of
/// them the optimizer steps on (counted with the gradients). `state` (--optimizer-state): the
/// master weights' and moments' bytes (FP32: 4 and 8; bf16-moments: 4 and 4; bf16: none and 4).
ModelState model_state(std::int64_t params_per_gpu, std::int64_t zero, std::int64_t dp,
                       bool bf16_grads = false, OptimizerState state = OptimizerState::kFp32);

/// One decoder layer, one micro-batch, one GPU: of a mixture-of-experts model, an MoE layer, or
/// with `moe_layer` false one of its dense layers.
struct LayerActivations {
  double saved = 0;      // kept from the layer's forward to its backward
  double recompute = 0;  // rebuilt transiently in the backward (selective: attention core;
                         // full: the whole layer)
};
LayerActivations layer_activations(const Model& model, const Plan& plan, bool moe_layer = true);

/// What one micro-batch of `stage` holds: its blocks' saved activations and transients, plus the
/// ZeRO-2/3 working set (gradients of one layer before their reduce-scatter; weights of the
/// current and the prefetched layer).
PassFootprint stage_footprint(const Model& model, const Plan& plan, const Partition& partition,
                              std::int64_t stage, std::int64_t padded_vocab);

struct StageMemory {
  ModelState state;
  double runtime_allocated = 0;  // the platform's allocator-visible runtime buffers
  PassFootprint footprint;       // per micro-batch
  ActivationTimeline timeline;   // allocated bytes (state + runtime + activations) over the step
  /// What torch.cuda.max_memory_allocated would report: state, runtime buffers and the
  /// activation peak.
  double peak_allocated = 0;
  /// Device memory at the peak: peak_allocated x (1 + fragmentation) + memory outside the
  /// allocator (CUDA context, NCCL). What must fit in the GPU.
  double peak_bytes = 0;
  /// The same peak without fragmentation: peak_allocated + memory outside the allocator. The
  /// fragmentation is assumed, never measured: a peak only it takes past the GPU may still fit.
  double peak_unfragmented_bytes = 0;

  /// What the GPU holds throughout the step: model state and the runtime buffers.
  double base() const { return state.total() + runtime_allocated; }
  /// What activations add at the peak, transients included.
  double activations_at_peak() const { return timeline.peak - base(); }
  /// The rest of the device peak: runtime buffers, fragmentation, memory outside the allocator.
  double runtime_at_peak() const { return peak_bytes - state.total() - activations_at_peak(); }
};

/// Device memory when the caching allocator holds `allocated` bytes: with the platform's
/// fragmentation and the memory outside the allocator.
double device_bytes(const RuntimeMemory& runtime, double allocated);

struct MemoryModel {
  std::vector<StageMemory> stages;
  double capacity = 0;  // bytes per GPU
  /// The stage with the highest device peak.
  std::int64_t worst_stage() const;
  /// The worst stage's fit in the capacity.
  MemoryFit fit() const;
  /// Every stage's peak_bytes within the capacity.
  bool fits() const { return fit() == MemoryFit::kFits; }
  /// Every stage's peak_unfragmented_bytes within it: false where no allocator could fit the plan.
  bool fits_unfragmented() const { return fit() != MemoryFit::kOver; }
};

/// Memory of every stage of `plan` on `platform`; `costs` gives each stage's parameters per GPU.
MemoryModel compute_memory(const Model& model, const Platform& platform, const Plan& plan,
                           const Partition& partition, const CostModel& costs);

}  // namespace trainsim
