#pragma once
// The parallel strategy: pure data plus the feasibility rules. Names follow Megatron-LM.
#include <algorithm>
#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/model/model.hpp"
#include "sim/plan/dims.hpp"
#include "sim/plan/lora_modules.hpp"
#include "sim/plan/recompute_modules.hpp"
#include "sim/platform/platform.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {

enum class Precision { kBF16, kFP8 };
/// How Transformer Engine scales FP8 tensors (Megatron-LM's --fp8-recipe):
/// - delayed: a per-tensor scale from the amax history of earlier steps, the amaxes all-reduced
///   over the stage's GPUs once a pass (the default);
/// - tensorwise: current scaling, each tensor's amax computed just before it is cast (a read of
///   the tensor), all-reduced over TP where sequence parallelism gathers it;
/// - blockwise: a scale per 1 x 128 block of activations and gradients and 128 x 128 block of
///   weights (DeepSeek-V3's), computed inside the cast;
/// - mxfp8: microscaling, Blackwell's tensor cores only.
enum class Fp8Recipe { kDelayed, kTensorwise, kBlockwise, kMxfp8 };
enum class ScheduleKind { kGPipe, k1F1B, kInterleaved, kZBH1 };
/// Activation recomputation: none; selective (Megatron-LM's modules, by default the attention
/// core); full (every decoder layer keeps its input only); op (torchtitan's per-operator selective
/// checkpointing: each decoder layer keeps the attention's output and every other matmul's, the
/// rest of its forward runs again).
enum class Recompute { kNone, kSelective, kFull, kOp };
/// How --recompute full takes --recompute-num-layers N (Megatron-LM's --recompute-method): block,
/// the first N layers of each chunk; uniform, every layer, in groups of N that keep one input each.
enum class RecomputeMethod { kBlock, kUniform };
/// The framework whose rules apply where frameworks differ (vocabulary padding, which error a
/// defect raises). Megatron-DeepSpeed follows Megatron's padding.
enum class Framework { kMegatron, kNanotron, kDeepSpeed, kColossalAI };

/// How the attention core runs: flash, one fused kernel as the kernel database times it (cuDNN's,
/// which Transformer Engine picks by default); unfused, Megatron-LM's path (--attention-backend
/// unfused, and the 2021 local implementation), batched QK^T and PV GEMMs around a fused
/// scale-mask-softmax over the materialised s x s scores; flash-attn2, Transformer Engine with
/// NVTE_FUSED_ATTN=0, the FlashAttention-2 kernels of the flash-attn package, the database's time x
/// the platform's flash_attn2_time_factor.
enum class AttentionBackend { kFlash, kUnfused, kFlashAttn2 };

/// How context parallelism runs attention over the sequence split across the CP group
/// (Megatron-LM's --cp-comm-type, Transformer Engine's implementations):
/// - p2p: K and V blocks passed around a ring, each step's transfer beside the block attention
///   of the step before (the default);
/// - a2a: all-to-alls trade the sequence split for a head split before the attention and back
///   after it (DeepSpeed-Ulysses);
/// - allgather: K and V all-gathered before the attention, their gradients reduce-scattered;
/// - a2a+p2p: both, hierarchically (Transformer Engine's a2a+p2p): all-to-alls over groups of
///   Plan::cp_a2a_size consecutive CP ranks trade their sequence split for a head split, and the
///   ranks one such group apart run the ring over the rest of the sequence split.
enum class CpComm { kP2P, kA2A, kAllGather, kA2AP2P };

/// How a mixture-of-experts layer sends each token to the GPUs holding its experts and back
/// (Megatron-Core's --moe-token-dispatcher-type): all-to-alls over the expert-parallel group
/// (the default), or the hidden states all-gathered over it and the outputs reduce-scattered.
enum class MoeDispatcher { kAllToAll, kAllGather };

/// The optimizer's state beside the weights, per parameter it steps:
/// - fp32: FP32 master weights and Adam moments, 12 bytes (Megatron-LM's mixed precision; the
///   default);
/// - bf16-moments: FP32 master weights, Adam moments in BF16, 8 bytes (Megatron-Core's precision-
///   aware optimizer with --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16);
/// - bf16: Adam moments in BF16 and no master copy, the BF16 weights stepped as they are, 4 bytes
///   (NeMo 1's distributed_fused_adam with optim.dtype bf16, the optimizer's dtype the model's);
///   FP8 primary weights (--fp8-param-gather) get a BF16 master copy, 2 bytes more (its
///   store_params, set where the weights' dtype is not the optimizer's).
/// Both BF16 kinds run on the distributed optimizer (zero >= 1).
enum class OptimizerState { kFp32, kBf16Moments, kBf16 };

/// What an optimizer state keeps per parameter it steps, and the Adam kernel that steps it (whose
/// bytes are its op's, sim/platform/kernel_shape.cpp): one row per OptimizerState.
struct OptimizerStateKind {
  const char* name;     // as the flag and reports write it
  double master_bytes;  // the master copy of the weights
  double moment_bytes;  // Adam's two moments
  const char* adam_op;
};
const OptimizerStateKind& kind_of(OptimizerState s);

const char* to_string(Precision p);
const char* to_string(Fp8Recipe r);
const char* to_string(AttentionBackend a);
const char* to_string(CpComm c);
const char* to_string(MoeDispatcher d);
const char* to_string(OptimizerState s);
const char* to_string(ScheduleKind s);
const char* to_string(Recompute r);
const char* to_string(RecomputeMethod m);
const char* to_string(Framework f);

struct Plan {
  std::int64_t tp = 1;
  std::int64_t pp = 1;
  std::int64_t dp = 1;
  std::int64_t cp = 1;
  CpComm cp_comm = CpComm::kP2P;
  /// a2a+p2p: the size of the all-to-all level, the ring's being cp / cp_a2a_size (Megatron-LM's
  /// --hierarchical-context-parallel-sizes cp_a2a_size cp/cp_a2a_size); 0 for the other kinds.
  std::int64_t cp_a2a_size = 0;
  /// Expert parallelism: each mixture-of-experts layer's experts split over ep GPUs, which
  /// re-divide the dp x cp (x tp / etp) ranks of the dense layers (Megatron-Core).
  std::int64_t ep = 1;
  /// Expert tensor parallelism: each expert's matrices split over etp GPUs; 0: as tp.
  std::int64_t etp = 0;
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  /// The busiest expert's tokens over the mean (1: balanced, as with Megatron-Core's forced
  /// balancing or a converged auxiliary loss). The step waits for the GPU holding it.
  double moe_imbalance = 1.0;
  /// Tokens an expert takes at most, over the mean (--moe-expert-capacity-factor); the rest are
  /// dropped. 0: no capacity, nothing dropped (dropless).
  double moe_capacity_factor = 0.0;
  /// Megatron-Core's --moe-grouped-gemm: a GPU's local experts run as one grouped GEMM per
  /// projection (the default here, as every published recipe sets it). False: its sequential
  /// experts (Megatron-LM's default), each local expert its own MLP whose GEMMs, activation and
  /// FP8 quantisation are their own launches over that expert's tokens.
  bool moe_grouped_gemm = true;
  /// Megatron-Core's --overlap-moe-expert-parallel-comm: the expert all-to-alls run on their own
  /// stream beside the layer's compute, exposed only where they outlast it.
  bool moe_a2a_overlap = false;
  /// Megatron-LM's --fp8-param-gather (FP8 runs, distributed optimizer): the GEMM weights kept in
  /// FP8 (no BF16 copy) and all-gathered in FP8, 1 byte an element.
  bool fp8_param_gather = false;
  /// Megatron-LM's --grad-reduce-in-bf16 (Megatron-Core's grad_reduce_in_fp32 false, NeMo's
  /// grad_sync_dtype bf16): gradients accumulated and reduced over DP in BF16, 2 bytes an
  /// element, instead of the fp32 main gradients Megatron-LM keeps for BF16 training.
  bool grad_reduce_in_bf16 = false;
  OptimizerState optimizer_state = OptimizerState::kFp32;
  /// Megatron-LM's --num-distributed-optimizer-instances: the distributed optimizer shards its
  /// state over dp x cp / N consecutive data-parallel ranks (an instance) instead of all of them,
  /// N copies in all; gradients are reduce-scattered within an instance, their shards all-reduced
  /// across the instances, and parameters all-gathered within an instance.
  std::int64_t num_distributed_optimizer_instances = 1;
  /// Multi-token-prediction modules trained after the last decoder layer (Megatron-Core's
  /// --mtp-num-layers). Unset: the model's own (DeepSeek-V3's 1) under Megatron; none under
  /// nanotron and DeepSpeed, which build none.
  std::optional<std::int64_t> mtp_num_layers;
  std::int64_t vp = 1;
  bool sp = false;
  std::int64_t mbs = 1;
  std::int64_t gbs = 0;  // 0: one micro-batch per data-parallel rank (mbs * dp)
  std::int64_t seq_len = 0;
  /// Documents packed into each sequence (NeMo's packed sequences for fine-tuning, Transformer
  /// Engine's THD format): every token attends causally within its own document only, so the
  /// attention runs over seq_len / packed_document_tokens documents of this many tokens. For
  /// documents of mixed lengths give E[l^2] / E[l] (the attention's work grows as the sum of the
  /// squares). 0: one document the length of the sequence, as in pre-training.
  std::int64_t packed_document_tokens = 0;
  /// Whether the attention sees shorter documents than the sequence.
  bool packs_documents() const {
    return packed_document_tokens > 0 && packed_document_tokens < seq_len;
  }
  Precision precision = Precision::kBF16;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  // with precision fp8
  ScheduleKind schedule = ScheduleKind::k1F1B;
  std::string partition = "uniform";  // a rule name or a Megatron layout string
  Recompute recompute = Recompute::kNone;
  /// What --recompute selective rebuilds (RecomputeModule flags; Megatron-Core's default: the
  /// attention core).
  std::uint32_t recompute_modules = kRecomputeCoreAttn;
  /// With --recompute full: how many decoder layers of each model chunk (virtual stage), its
  /// first, run their forward again before the backward, the others keeping their activations
  /// (Megatron-LM's --recompute-method block --recompute-num-layers N); 0: every layer.
  std::int64_t recompute_num_layers = 0;
  RecomputeMethod recompute_method = RecomputeMethod::kBlock;
  /// Whether the decoder layer at `index` among its model chunk's decoder layers (from 0) runs its
  /// forward again before its backward (keeping only its input, or its group's).
  bool fully_recomputes(std::int64_t index) const {
    return recompute == Recompute::kFull &&
           (recompute_num_layers == 0 || recompute_method == RecomputeMethod::kUniform ||
            index < recompute_num_layers);
  }
  /// Full recomputation of only the first recompute_num_layers layers of each chunk (block N).
  bool partially_recomputes() const {
    return recompute == Recompute::kFull && recompute_num_layers > 0 &&
           recompute_method == RecomputeMethod::kBlock;
  }
  /// Layers checkpointed together, keeping one input (uniform N; 1 otherwise).
  std::int64_t recompute_group() const {
    const bool grouped = recompute == Recompute::kFull &&
                         recompute_method == RecomputeMethod::kUniform && recompute_num_layers > 1;
    return grouped ? recompute_num_layers : 1;
  }
  AttentionBackend attention_backend = AttentionBackend::kFlash;
  /// Dropout probability on the attention probabilities (Megatron-LM's --attention-dropout,
  /// whose default is 0.1; NeMo's recipes set 0). Above 0 it costs time and memory only in the
  /// unfused backend, where the s x s probabilities pass through PyTorch's dropout; a fused
  /// kernel draws its mask inside (not priced: the kernel database times it without dropout).
  double attention_dropout = 0.0;
  /// Dropout probability on the hidden states (Megatron-LM's --hidden-dropout, default 0.1;
  /// NeMo's recipes 0): after the embedding and in each attention and MLP block's fused
  /// bias-dropout-add, each keeping a 1-byte mask for the backward.
  double hidden_dropout = 0.0;
  /// Megatron-Core's fused vocabulary-parallel cross-entropy (--cross-entropy-loss-fusion, its
  /// native implementation): its forward writes the exponentiated logits to a second fp32 tensor
  /// beside the fp32 copy it takes, where the plain one works in place (memory only: the loss's
  /// kernels are timed as the plain one's).
  bool cross_entropy_loss_fusion = false;
  /// LoRA fine-tuning (NeMo's peft LoRA, its dim): every base weight frozen, and a low-rank
  /// adapter of this rank trained beside each of lora_target_modules in every decoder layer.
  /// 0: every weight trained (pre-training, full fine-tuning).
  std::int64_t lora_rank = 0;
  /// The decoder layers' linears that get an adapter (LoraModule flags; NeMo's default: all four).
  std::uint32_t lora_target_modules = kLoraAllModules;
  bool lora() const { return lora_rank > 0; }
  std::int64_t zero = 0;
  /// Pad the vocabulary to a multiple of this x tp; 0: the framework's default.
  std::int64_t vocab_divisible_by = 0;
  std::int64_t gpus = 0;  // 0: as many as the plan needs
  /// Unset: inferred from the partition rule (nanotron, deepspeed-*), else Megatron.
  std::optional<Framework> framework;
  // Megatron-LM's uneven pipeline options (-1: not set).
  std::int64_t decoder_first_pipeline_num_layers = -1;
  std::int64_t decoder_last_pipeline_num_layers = -1;
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  /// Interleaved schedule: micro-batches per chunk group (Megatron-LM's
  /// --microbatch-group-size-per-virtual-pipeline-stage); 0: pp.
  std::int64_t microbatch_group_size_per_vp_stage = 0;
  // Overlap of communication with compute; defaults are Megatron-LM's.
  bool overlap_grad_reduce = false;   // DP gradient reduction in buckets during the backward
  bool overlap_param_gather = false;  // distributed optimizer: parameter all-gather in forward
  bool tp_comm_overlap = false;       // TP collectives alongside their GEMMs
  /// Gradients reduced over DP after every micro-batch's backward, not only the last one's
  /// (PyTorch FSDP and DDP under gradient accumulation as torchtitan runs them); Megatron-LM
  /// reduces once a step. DeepSpeed's ZeRO-2 and ZeRO-3 do it whatever this says:
  /// reduces_every_microbatch().
  bool grad_reduce_per_microbatch = false;
  /// Megatron-LM's --defer-embedding-wgrad-compute: the last stage keeps the LM head's input and
  /// output gradient of the first wgrad_deferral_limit micro-batches (0: of every one) and runs
  /// their weight-gradient GEMMs after its last backward, in the pipeline flush.
  bool defer_embedding_wgrad_compute = false;
  std::int64_t wgrad_deferral_limit = 0;
  /// Pipeline exchanges on their own streams (interleaved schedule only). Unset: Megatron-LM's
  /// default, on for the interleaved schedule; off for gpipe and 1f1b; zb-h1 always overlaps.
  std::optional<bool> overlap_p2p_comm;
  /// How ranks enumerate the parallel dimensions, innermost first (Megatron-LM's `order`; its
  /// --use-tp-pp-dp-mapping is tp-cp-ep-pp-dp).
  RankOrder rank_order = kMegatronOrder;

  /// Field by field: equal plans describe the same run (sim/search caches candidates by plan).
  auto operator<=>(const Plan&) const = default;

  std::int64_t world_size() const { return tp * pp * dp * cp; }
  /// tp x cp x pp: the GPUs of one data-parallel rank; a GPU count without dp leaves dp the rest.
  std::int64_t model_parallel_size() const { return tp * cp * pp; }
  /// The CP ranks whose all-to-alls split the heads: cp with a2a, cp_a2a_size with a2a+p2p.
  std::int64_t cp_head_split() const {
    if (cp_comm == CpComm::kA2AP2P) return cp_a2a_size > 0 ? cp_a2a_size : 1;
    return cp_comm == CpComm::kA2A ? cp : 1;
  }
  /// The ranks a K/V ring (or all-gather) runs over: cp / cp_head_split().
  std::int64_t cp_ring_size() const { return cp / cp_head_split(); }
  /// Whether sequence parallelism runs: --sp at tp 2 or more (Megatron-LM's validate_args turns
  /// it off at tp 1).
  bool sequence_parallel() const { return sp && tp > 1; }
  /// Ranks holding the same parameters, whose gradients are reduced together and over which the
  /// distributed optimizer shards: dp x cp (Megatron-LM's data-parallel group with CP).
  std::int64_t data_shards() const { return dp * cp; }
  std::int64_t expert_tp() const { return etp > 0 ? etp : tp; }
  /// Ranks holding the same experts (Megatron-Core's expert data parallelism): the world over
  /// expert_tp x ep x pp.
  std::int64_t expert_data_shards() const { return world_size() / (expert_tp() * ep * pp); }
  /// Ranks over which the distributed optimizer shards the dense and the expert parameters'
  /// state: one instance's share of data_shards() and expert_data_shards().
  std::int64_t optimizer_shards() const {
    return data_shards() / num_distributed_optimizer_instances;
  }
  std::int64_t expert_optimizer_shards() const {
    return expert_data_shards() / num_distributed_optimizer_instances;
  }
  std::int64_t global_batch() const { return gbs > 0 ? gbs : mbs * dp; }
  /// Micro-batches per step as frameworks compute them: gbs // (mbs x dp).
  std::int64_t num_microbatches() const { return global_batch() / (mbs * dp); }
  /// Sequences actually trained per step (all of gbs when it divides evenly).
  std::int64_t sequences_per_step() const { return num_microbatches() * mbs * dp; }
  /// Tokens trained per step: those sequences' tokens.
  std::int64_t tokens_per_step() const { return sequences_per_step() * seq_len; }
  Framework effective_framework() const;
  /// Megatron-LM's distributed optimizer (ZeRO-1 and up): gradients reduce-scattered and
  /// parameters all-gathered over DP instead of one all-reduce.
  bool distributed_optimizer() const { return zero >= 1; }
  /// Whether the gradients are reduced after every micro-batch's backward: where asked, and
  /// always under DeepSpeed's ZeRO-2 and ZeRO-3, whose backward hooks reduce each gradient
  /// partition as it is produced (stage_1_and_2.py reduces at the accumulation boundary only
  /// for ZeRO-1; stage3.py on every backward).
  bool reduces_every_microbatch() const {
    return grad_reduce_per_microbatch ||
           (effective_framework() == Framework::kDeepSpeed && zero >= 2);
  }
  /// Any of Megatron-LM's uneven pipeline options (first/last stage layers, the embedding or the
  /// loss counted as a layer).
  bool uneven_stage_options() const {
    return decoder_first_pipeline_num_layers >= 0 || decoder_last_pipeline_num_layers >= 0 ||
           account_for_embedding_in_pipeline_split || account_for_loss_in_pipeline_split;
  }
  /// Drops every one of them.
  void clear_uneven_stage_options() {
    decoder_first_pipeline_num_layers = decoder_last_pipeline_num_layers = -1;
    account_for_embedding_in_pipeline_split = account_for_loss_in_pipeline_split = false;
  }
  bool p2p_overlap() const {
    return schedule == ScheduleKind::kZBH1 ||
           overlap_p2p_comm.value_or(schedule == ScheduleKind::kInterleaved);
  }
  /// Micro-batches whose LM-head weight gradient the last stage defers to the flush (0 when it
  /// defers none).
  std::int64_t deferred_lm_head_wgrads() const {
    if (!defer_embedding_wgrad_compute) return 0;
    const std::int64_t m = num_microbatches();
    return wgrad_deferral_limit > 0 ? std::min(wgrad_deferral_limit, m) : m;
  }
  /// The vocabulary multiple per TP rank: --vocab-divisible-by, else the framework's default
  /// (Megatron and Megatron-DeepSpeed 128, ColossalAI 64, nanotron 1).
  std::int64_t vocab_multiple() const;
};

/// The pipeline schedule the plan runs: its kind, stages, micro-batches, chunks and groups.
ScheduleConfig schedule_config(const Plan& plan);

/// The plan with recomputation `r`. Modules belong to selective recomputation (Megatron-LM refuses
/// --recompute-modules with another granularity), so under any other the plan keeps the default;
/// full recomputation then takes every layer.
Plan recomputing(Plan plan, Recompute r);

/// The model as the plan trains it: with the multi-token-prediction modules --mtp-num-layers
/// asks for (unset: the model's own under Megatron, none under nanotron and DeepSpeed).
Model trained_model(Model model, const Plan& plan);

/// The command-line flag of a plan field: "--seq-len" for seq_len.
std::string flag_of(const std::string& field);

/// Where each plan field was set ("--tp" or "scenarios/x.json: $.plan.tp"), so feasibility errors
/// name what the user wrote. Fields not present default to their flag.
struct PlanOrigin {
  std::map<std::string, std::string> where;
  std::string of(const std::string& field) const;
  /// How a message names another field: its flag ("--pp"), which sets it over a scenario's
  /// value too, or the name a layout given to another flag writes ("pp" of --from pp=2).
  std::string name(const std::string& field) const;
};

/// Feasibility rules of the plan for this model and platform. Throws InputError naming the flag
/// or JSON path at fault and what would be valid.
void validate_plan(const Plan& plan, const Model& model, const Platform& platform,
                   const PlanOrigin& origin);

}  // namespace trainsim
