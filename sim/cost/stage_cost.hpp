#pragma once
// Per-stage costs of one training step: compute time of a forward and a backward pass per
// micro-batch (with every kernel's time and its source), the collectives each pass issues
// (tensor-parallel all-reduces), the pipeline message size, the data-parallel gradient buffer and
// the optimizer step.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/cost/layer_ops.hpp"
#include "sim/cost/rank_params.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

struct KernelCost {
  std::string name;  // "decoder.qkv_proj", "lm_head.dgrad", ...
  KernelKind kind;
  std::int64_t count = 1;  // launches per pass (decoder kernels: once per layer of the stage)
  double flops = 0;        // per launch
  double bytes = 0;        // per launch
  KernelShape shape;
  KernelTime time;  // per launch
};

struct PassCost {
  double seconds = 0;  // all kernels of the pass, summed, and overlap_stall()
  /// Where calls beside the pass's kernels outlast them (TP calls beside their GEMMs, a CP ring
  /// beside the attention steps, expert all-to-alls beside the layer): the kernels' wait
  /// (sim/cost/tp_overlap) per dimension of the calls waited for, and in all.
  std::array<double, kNumDims> stall_s{};
  double stall(Dim d) const { return stall_s[index_of(d)]; }
  double overlap_stall() const {
    double all = 0;
    for (const double s : stall_s) all += s;
    return all;
  }
  std::vector<KernelCost> kernels;
  std::vector<CollectiveLoad> collectives;  // issued after the pass's compute (or beside it)
};

/// Costs of one virtual stage (a physical stage without interleaving).
struct StageCost {
  PassCost forward;   // one micro-batch
  PassCost backward;  // one micro-batch, whole
  /// The backward split as zero-bubble schedules run it: the input gradient (every backward
  /// kernel but the weight-gradient GEMMs, with the TP all-reduces) and the weight gradient.
  PassCost backward_input;
  PassCost backward_weight;
  /// With --defer-embedding-wgrad-compute: the backward without the LM head's weight-gradient
  /// GEMM (its input gradient's TP call then after the pass, no gather of its input), and that
  /// GEMM alone, one micro-batch's, as the last stage runs it in the pipeline flush (with its
  /// input's all-gather beside it under sequence parallelism; sim/cost/vocab_ops.hpp). Empty
  /// otherwise, and on stages without the LM head.
  PassCost backward_deferring_lm_head_wgrad;
  PassCost lm_head_wgrad;
  /// What --recompute re-runs before each backward: the decoder layers' forward (full, with its
  /// TP all-reduces) or their attention core (selective); empty without recomputation.
  PassCost recompute;
  /// Message to the next stage (and its gradient back): the output of the stage's last block,
  /// hidden states in BF16 after a decoder, logits after the LM head, fp32 logits after a cast.
  double p2p_bytes = 0;
  double grad_bytes = 0;  // data-parallel gradient reduction buffer per GPU (fp32 or BF16)
  /// Of those, the word embedding's (or its copy's) that the stage all-reduces with the other
  /// stage holding it, after the data-parallel reduction (0 where it holds neither).
  double embedding_sync_bytes = 0;
  /// Of those, the replicated parameters' whose gradients each TP rank computes from its own
  /// tokens or heads (norms and biases under sequence parallelism, q/k norms; StageParams), that
  /// the stage all-reduces over TP after the data-parallel reduction (0 without TP).
  double tp_sync_bytes = 0;
  /// The MoE layers' tokens-per-expert counts (fp32) where the router keeps an expert bias: the
  /// stage all-reduces them over its every rank (TP x CP x DP) after the data-parallel reduction,
  /// to move the biases. Also the size of each of the two buffers the routers keep (the counts,
  /// the biases); 0 without expert bias.
  double expert_bias_sync_bytes = 0;
  /// With FP8 GEMMs, the chunk's first forward of a step: `forward` and the quantisation of its
  /// GEMM weights, which the other micro-batches reuse (sim/cost/fp8_weights.hpp); empty (no
  /// kernels) otherwise.
  PassCost first_forward;
  PassCost optimizer;               // once per step
  std::int64_t params = 0;          // logical parameters of the stage's blocks
  std::int64_t params_per_gpu = 0;  // held by each GPU of the stage: TP shard, padded vocabulary
  /// The part of params_per_gpu in experts that expert parallelism splits (0 without EP): their
  /// gradients reduce over the expert-data-parallel group, not the data-parallel one.
  std::int64_t expert_params_per_gpu = 0;
  /// The part of params_per_gpu in the decoder layers' GEMM weights (every linear layer but the
  /// router): what an FP8 run quantises, keeping an FP8 copy and its transpose beside each.
  std::int64_t gemm_params_per_gpu = 0;
  /// Under LoRA (Plan::lora_rank, `lora`) every parameter held is frozen and the adapters each
  /// GPU of the stage trains beside them are all that has gradients, their reduction and
  /// optimizer state (none on a stage without decoder layers).
  bool lora = false;
  std::int64_t lora_params_per_gpu = 0;
  /// What the optimizer steps: the adapters under LoRA, else every parameter held.
  std::int64_t trained_params_per_gpu() const {
    return lora ? lora_params_per_gpu : params_per_gpu;
  }
};

struct CostModel {
  std::int64_t padded_vocab = 0;
  std::vector<StageCost> stages;
};

/// The physical stages that all-reduce the word embedding's gradient with one another (the
/// members of Megatron-Core's embedding group along the pipeline), ascending; empty when none
/// does (untied, or the embedding and its copy on one GPU).
std::vector<std::int64_t> embedding_sync_stages(const CostModel& costs, std::int64_t pp);

/// Bytes moved per parameter by the Adam step with fp32 master weights and moments: read the
/// fp32 gradient, master weight and two moments; write those three and the BF16 weight.
inline constexpr double kAdamBytesPerParam = 4 * 4 + 3 * 4 + 2;
/// Gradient all-reduce element size: Megatron-LM reduces BF16 training gradients in fp32, or in
/// BF16 with --grad-reduce-in-bf16.
inline constexpr double kGradReduceBytes = 4;
inline double grad_reduce_bytes(const Plan& plan) {
  return plan.grad_reduce_in_bf16 ? 2.0 : kGradReduceBytes;
}
/// A router's tokens-per-expert count and expert bias: fp32 each.
inline constexpr double kExpertBiasBytes = 4;

/// A kernel's time: from the platform's kernel-timing database when it holds or brackets the
/// shape (measured, interpolated or published), else the roofline at the precision of the
/// kernel's own operands (a BF16 GEMM in an FP8 plan at the BF16 peak). As measured in isolation:
/// compute_costs() applies the platform's calibration (compute_time_factor) on top.
KernelTime kernel_time(const Platform& platform, const KernelSpec& kernel);

CostModel compute_costs(const Model& model, const Platform& platform, const Plan& plan,
                        const Partition& partition);

/// The run-to-run spread of the plan's kernels: the P10 and P90 ratios of every kernel the
/// database timed (measured, interpolated or nearest), averaged with weights its time in a
/// micro-batch's forward, backward and recomputation (launches x time); a kernel the roofline
/// priced has no known spread and is left out. {1, 1} when the database timed none.
TimeSpread kernel_spread(const CostModel& costs);

/// Forward and backward cost of one block for one micro-batch (what the balanced partition
/// weighs stages by).
struct BlockCost {
  PassCost forward;
  PassCost backward;
};
BlockCost block_cost(const Model& model, const Platform& platform, const Plan& plan,
                     BlockKind kind);

/// Bytes of the tensor a block hands to the next one, per micro-batch on one TP rank (a
/// multi-token-prediction module passes the main hidden states and each module's so far, as
/// Megatron-Core concatenates them).
double block_output_bytes(const Block& block, const LayerShape& shape);
/// How often a block runs per micro-batch: the LM head and the loss once more for each
/// multi-token-prediction module of the model, every other block once.
std::int64_t block_runs(BlockKind kind, const Model& model);

}  // namespace trainsim
