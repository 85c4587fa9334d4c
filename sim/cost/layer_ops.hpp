#pragma once
// FLOPs and bytes of every kernel of a training step on one tensor-parallel rank, per
// micro-batch, for each kind of block. Megatron-LM layout: column-parallel QKV and MLP-up,
// row-parallel output and MLP-down projections, vocabulary-parallel embedding, LM head and
// cross-entropy. With sequence parallelism the norms and residual adds run on the rank's
// 1/tp of the tokens, and each TP all-reduce of a decoder layer becomes the all-gather and the
// reduce-scatter around its GEMMs, each paired with the GEMM it overlaps where one does.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/collective/kinds.hpp"
#include "sim/cost/roofline.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/kernel_shape.hpp"

namespace trainsim {

struct KernelSpec {
  std::string name;
  KernelKind kind;
  double flops = 0;
  double bytes = 0;
  KernelShape shape;  // what the kernel-timing database is searched for; flops and bytes follow it
  std::int64_t launches =
      1;  // per block pass (a context-parallel ring runs its attention in steps)
};

/// Collectives a pass issues on the group of one parallel dimension: `count` calls of `kind`
/// moving `bytes` in total (per member), each call paying the collective's latency. A TP
/// collective `alongside` runs on its own stream beside the pass's kernels (the next pass waits
/// for both); otherwise it runs after them, on the compute stream.
struct CollectiveLoad {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Dim dim = Dim::kTP;
  double bytes = 0;
  std::int64_t count = 0;
  bool alongside = false;
};

/// Adds `load` to a pass's list, merged with the calls of the same kind on the same dimension
/// that run the same way (alongside or after).
void add_collective(std::vector<CollectiveLoad>& list, const CollectiveLoad& load);
/// The calls of `kind` on `dim` in a list, alongside or not (zero calls when there are none).
CollectiveLoad collective_load(const std::vector<CollectiveLoad>& list, CollectiveKind kind,
                               Dim dim);

/// How a TP collective overlaps the GEMM it feeds or follows (Transformer Engine's userbuffers
/// methods, sim/cost/tp_overlap.hpp prices each).
enum class OverlapMethod {
  kBulk,          // independent of the GEMM, beside it: the input re-gather, the dgrad's reduction
  kRingExchange,  // all-gather in tp chunks, the GEMM on each chunk as it arrives
  kPipelined,     // the GEMM in chunks, each chunk's reduce-scatter after it
};

/// One collective call beside kernels of the same pass (by the kernels' names): a TP call beside
/// its GEMM, or a context-parallel ring exchange beside the attention steps.
struct OverlapPair {
  CollectiveKind kind = CollectiveKind::kAllGather;
  double bytes = 0;  // per call
  std::vector<std::string> kernels;
  OverlapMethod method = OverlapMethod::kBulk;
  Dim dim = Dim::kTP;
};

struct BlockPass {
  std::vector<KernelSpec> kernels;
  std::vector<CollectiveLoad> collectives;
  /// The alongside TP calls of `collectives`, each with the GEMM it overlaps: the pass stalls
  /// where a call outlasts its GEMM's share (compute_costs prices them on the TP group).
  std::vector<OverlapPair> overlaps;
};

/// `n` tensor-parallel calls of `kind` on `bytes` each, after the pass's kernels.
void tp_after(BlockPass& p, CollectiveKind kind, double bytes, std::int64_t n = 1);
/// One TP call of `kind` on a `bytes` buffer: after the pass's kernels or, when `alongside`,
/// beside them, overlapping the GEMM named `gemm` by `method`.
void tp_call(BlockPass& p, CollectiveKind kind, double bytes, bool alongside, std::string gemm,
             OverlapMethod method);
/// One TP call posted asynchronously beside the GEMM `gemm` of the same pass, independent of it
/// (a linear's backward without userbuffers: the input's re-gather beside the input-gradient
/// GEMM, the input gradient's call beside the weight-gradient GEMM).
void tp_beside(BlockPass& p, CollectiveKind kind, double bytes, std::string gemm);

struct LayerShape {
  double tokens = 0;     // micro-batch tokens on this rank: b * s, over cp with CP
  double seq = 0;        // s
  double hidden = 0;     // h
  double q = 0;          // query width per TP rank
  double kv = 0;         // key (= value) width per TP rank
  double v = 0;          // attention output width per TP rank (= q, but MLA's value heads)
  double ffn = 0;        // dense MLP width per TP rank
  double up_factor = 1;  // 2 for gated MLPs (gate and up projections)
  double vocab = 0;      // padded vocabulary rows per TP rank
  double act_bytes = 2;  // bytes per activation element (BF16)
  bool rope = true;
  bool learned_positions = false;  // learned absolute positions, added to the embedding's output
  bool qk_norm = false;  // Model::qk_norm: a per-head norm on queries and keys before RoPE
  bool qk_norm_across_heads = false;  // Model::qk_norm_across_heads: over the rank's heads at once
  bool sandwich_norms = false;  // Model::sandwich_norms: norms on the attention and MLP outputs
  std::int64_t tp = 1;
  std::int64_t cp = 1;
  CpComm cp_comm = CpComm::kP2P;
  std::int64_t cp_head_split = 1;  // Plan::cp_head_split(): CP ranks sharing out the heads
  std::int64_t cp_ring = 1;        // Plan::cp_ring_size(): CP ranks a K/V ring runs over
  bool sp = false;                 // sequence parallelism
  /// Plan::tp_comm_overlap: Transformer Engine's userbuffers overlap of the forward's TP
  /// all-gathers and reduce-scatters and the backward's gradient all-gathers with their GEMMs.
  bool tp_comm_overlap = false;
  /// Tokens of the norms and residual adds on this rank.
  double sharded_tokens() const { return sp ? tokens / static_cast<double>(tp) : tokens; }
  // Integer shapes for the kernel-timing database.
  std::int64_t batch = 1;     // micro-batch size
  std::int64_t head_dim = 0;  // d
  std::int64_t heads = 0;     // query heads per TP rank (and a2a CP rank)
  std::int64_t kv_heads = 0;  // key/value heads per TP rank (and a2a CP rank)
  DType gemm_dtype = DType::kBF16;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  // Plan::fp8_recipe, with FP8 GEMMs
  bool unfused_attention = false;              // Plan::attention_backend
  bool attention_dropout = false;              // Plan::attention_dropout above 0
  bool hidden_dropout = false;                 // Plan::hidden_dropout above 0
  /// Local attention (Model::local_attention) on this layer: the tokens of the causal blocks its
  /// flash attention costs as (a chunk; two windows for a sliding window, whose s x w scores
  /// equal causal blocks of 2w); 0: the whole sequence.
  double local_block = 0;
  bool sliding = false;  // a sliding window (not a chunk)
  /// LoRA (Plan::lora_rank): every weight frozen, an adapter of `rank` beside each of the
  /// `targets` linears (LoraModule flags, sim/cost/lora.hpp); rank 0: every weight trained.
  struct Lora {
    std::int64_t rank = 0;
    std::uint32_t targets = 0;
  } lora;
  /// Plan::packed_document_tokens where the sequence packs shorter documents: the tokens of
  /// each, which the attention runs over causally; 0: the whole sequence is one document.
  double document = 0;
  NormKind norm = NormKind::kRMSNorm;
  FfnKind ffn_kind = FfnKind::kSwiGLU;
  /// Mixture of experts: the decoder's MLP is a router, the token dispatch and the experts.
  struct Moe {
    std::int64_t experts = 0;  // routed experts in all; 0: a dense MLP
    std::int64_t local = 0;    // experts on this GPU: experts / ep
    double topk = 0;           // experts per token
    double ffn = 0;            // one expert's FFN width per expert-TP rank
    std::int64_t ep = 1;
    std::int64_t etp = 1;
    /// Tokens the busiest GPU's experts take over the mean (imbalance, capacity; every GPU
    /// waits for it at the combine).
    double load = 1;
    MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
    double shared_ffn = 0;     // the shared expert's width per TP rank (0: none)
    bool shared_gate = false;  // MoeSpec::shared_expert_gate
    bool a2a_overlap = false;  // Plan::moe_a2a_overlap
    bool grouped = true;       // Plan::moe_grouped_gemm
  } moe;
  bool is_moe() const { return moe.experts > 0; }
  /// Multi-head latent attention (DeepSeek): the down-projections whole on every TP rank
  /// (Megatron-Core's duplicated linears), the up-projections column-parallel.
  struct Mla {
    double q_lora = 0;   // 0: queries by one column-parallel projection
    double kv_lora = 0;  // 0: not MLA
    double rope = 0;     // the shared rotary key's width
    double q_up = 0;     // query width per TP rank: heads x (nope + rope)
    double kv_up = 0;    // keys and values per TP rank: heads x (nope + v)
  } mla;
  bool is_mla() const { return mla.kv_lora > 0; }
};

/// Tokens the busiest GPU's `local` experts (of `experts`) take, over the balanced mean, when
/// the busiest expert takes `imbalance` times the mean and the others share the rest evenly;
/// with a capacity factor (> 0) no expert takes more than that many times the mean.
double expert_rank_load(std::int64_t experts, std::int64_t local, double imbalance,
                        double capacity_factor);

/// Bytes per element of an all-gathered GEMM input: in FP8 Transformer Engine gathers the
/// quantised operand the GEMM reads (its norm writes FP8, or it quantises before the gather),
/// else the BF16 activation.
double gathered_bytes(const LayerShape& s);

/// The call on a column-parallel linear's input gradient: reduce-scattered to the sequence
/// shares with sequence parallelism, else all-reduced.
CollectiveKind column_input_gradient_call(const LayerShape& s);

/// A column-parallel linear's backward TP calls without userbuffers (Megatron's own linear and
/// Transformer Engine's where it does not overlap): with sequence parallelism its input,
/// `gathered` bytes, gathered again beside the input-gradient GEMM `name`.dgrad, and the input
/// gradient's call on `gradient` bytes beside the weight-gradient GEMM `name`.wgrad.
void column_linear_backward_calls(BlockPass& p, const LayerShape& s, const std::string& name,
                                  double gathered, double gradient);

/// Whether the decoder layers run --tp-comm-overlap's userbuffers as the plan asks. Megatron-Core
/// (from core 0.13 to today) turns it off for a multi-latent-attention model: each Transformer
/// Engine linear whose buffer name is not qkv, proj, fc1 or fc2 sets the model's shared
/// config's tp_comm_overlap to False when built, and the first layer's q_down_proj (q_proj
/// without a query LoRA rank) is one, so every layer built after it runs its TP collectives
/// without userbuffers. Only the first layer's attention output projection, built before it,
/// keeps them on each pipeline rank, which trainsim does not price apart.
bool decoder_tp_overlap(const Model& model, const Plan& plan);
/// Whether a multi-token-prediction module's layer does: never under Megatron-Core, whose module
/// builds its projection (eh_proj, a Transformer Engine linear named "mtp_eh_proj", d98e8a64)
/// before its layer, turning the shared switch off as above.
bool mtp_layer_tp_overlap(const Model& model, const Plan& plan);

/// The shape of the model's decoder layers under `plan`; for a mixture-of-experts model, of its
/// MoE layers, or with `moe_layer` false of its dense ones.
LayerShape layer_shape(const Model& model, const Plan& plan, std::int64_t padded_vocab,
                       bool moe_layer = true);
/// The same layer with local attention (its local_block set from the model's).
LayerShape with_local_attention(const Model& model, LayerShape shape);

/// Whether the token dispatcher gathers the routed tokens over the expert tensor-parallel group
/// before the experts (and reduce-scatters their outputs after): with expert TP, where the GPUs
/// of that group hold different tokens (sequence parallelism, or no TP in the dense layers).
bool experts_gather_tokens(const LayerShape& s);
/// The group those gathers run over: TP's own where expert TP equals it, else the expert
/// tensor-parallel group (the expert layers' re-division of the ranks, Layout).
Dim expert_tp_dim(const LayerShape& s);
/// Rows the busiest GPU's experts compute in an MoE layer, per micro-batch: its tokens (1/tp of
/// them with SP) times top-k, gathered over expert TP where experts_gather_tokens, times the
/// busiest GPU's load.
double routed_expert_rows(const LayerShape& s);

/// Kernels and TP all-reduces of one block's forward or backward pass.
BlockPass block_pass(BlockKind block, bool backward, const LayerShape& shape);

/// A block's forward and backward passes (block_pass), with what the plan's FP8 scaling recipe
/// adds to them (sim/cost/fp8_recipe.hpp): what the cost model prices.
struct BlockPasses {
  BlockPass forward;
  BlockPass backward;
};
BlockPasses block_passes(BlockKind block, const LayerShape& shape);

/// A weight-gradient kernel (a linear's ".wgrad" GEMM, the embedding's gradient): the W of
/// zero-bubble schedules, and what LoRA's frozen weights drop.
bool is_weight_gradient(const KernelSpec& k);

/// A memory-bound optimizer kernel over `params` fp32 elements (op "grad_norm" or "adam").
KernelSpec optimizer_kernel(std::string name, std::string op, std::int64_t params);

}  // namespace trainsim
