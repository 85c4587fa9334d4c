#include "sim/cli/plan_flags.hpp"

#include <boost/program_options.hpp>

namespace po = boost::program_options;

namespace trainsim {

namespace {

po::typed_value<std::string>* value(const char* value_name) {
  return po::value<std::string>()->value_name(value_name);
}

// How the GPUs divide the model: the parallel dimensions and their sizes.
void add_parallel_flags(po::options_description& d) {
  auto s = value;
  auto add = d.add_options();
  add("tp", s("N"), "tensor-parallel size: splits every layer's matrices over N GPUs of a node");
  add("pp", s("N"), "pipeline-parallel size: splits the layers into N stages");
  add("dp", s("N"), "data-parallel size: N replicas, gradients all-reduced each step");
  add("cp", s("N"),
      "context-parallel size: splits each sequence over N GPUs (in 2N chunks, rank i holding "
      "chunks i and 2N-1-i so that causal attention balances); activations shrink N-fold, "
      "weights are replicated and their gradients reduced over dp x cp (default 1)");
  add("cp-comm-type", s("NAME"),
      "how attention crosses the CP group (Megatron-LM's --cp-comm-type): p2p (default; K/V "
      "blocks around a ring, each transfer beside the previous block's attention), a2a "
      "(all-to-alls swap the sequence split for a head split; heads divisible by tp x cp), "
      "allgather (K/V all-gathered before the attention, not overlapped), a2a+p2p (both: "
      "all-to-alls over --cp-a2a-size consecutive CP ranks, the ring over the rest)");
  add("cp-a2a-size", s("N"),
      "with --cp-comm-type a2a+p2p, the all-to-all level's size: N consecutive CP ranks split "
      "the heads (tp x N divides the heads and KV heads), and rings of cp/N ranks, one a2a "
      "group apart, pass K/V (Megatron-LM's --hierarchical-context-parallel-sizes N cp/N)");
  add("ep", s("N"),
      "expert-parallel size: each mixture-of-experts layer's experts split over N GPUs, which "
      "re-divide the dense layers' dp x cp (x tp / etp) GPUs; tokens reach their experts by "
      "all-to-all over the EP group (default 1)");
  add("etp", s("N"),
      "expert tensor-parallel size: each expert's matrices split over N GPUs, their tokens "
      "gathered over them (Megatron-LM's --expert-tensor-parallel-size; default tp)");
  add("moe-token-dispatcher-type", s("NAME"),
      "how tokens reach their experts: alltoall (default) or allgather (hidden states gathered "
      "over the EP group, outputs reduce-scattered)");
  add("moe-imbalance", s("X"),
      "load of the busiest expert over the mean (default 1: balanced); the step waits for the "
      "GPU holding it, at most experts / top-k");
  add("moe-capacity-factor", s("X"),
      "tokens an expert takes at most, over the mean; the rest are dropped (default 0: "
      "dropless)");
  add("no-moe-grouped-gemm", po::bool_switch(),
      "Megatron-Core's sequential experts (Megatron-LM without --moe-grouped-gemm): each local "
      "expert its own MLP, its GEMMs, activation and FP8 quantisation launched once per expert "
      "over that expert's tokens; by default the local experts run as one grouped GEMM per "
      "projection");
  add("mtp-num-layers", s("N"),
      "multi-token-prediction modules trained after the last decoder layer, each a decoder "
      "layer like the last with its own projection, norms and loss through the shared LM head "
      "(Megatron-Core; a layout places them with m; default: the model's own, DeepSeek-V3's 1; "
      "0 trains none)");
  add("vp", s("N"),
      "model chunks (virtual stages) per GPU for --schedule interleaved: the layers are split into "
      "pp x vp virtual stages, chunk c of stage s being virtual stage c x pp + s (default 1)");
  add("sp", po::bool_switch(),
      "sequence parallelism: elementwise work split over the TP group; each TP all-reduce "
      "becomes an all-gather before a GEMM and a reduce-scatter after one, the same total "
      "traffic (needs --tp >= 2)");
}

// Batch, schedule, how the layers are assigned to stages and how ranks are placed.
void add_batch_and_schedule_flags(po::options_description& d) {
  auto s = value;
  auto add = d.add_options();
  add("mbs", s("N"), "micro-batch size in sequences (default 1)");
  add("gbs", s("N"),
      "global batch size in sequences; micro-batches per step = gbs / (mbs x dp), which must "
      "divide evenly (else a gbs-not-divisible error)");
  add("seq-len", s("N"), "sequence length in tokens (required)");
  add("packed-document-tokens", s("N"),
      "fine-tuning on packed sequences (NeMo's packed_sequence, Transformer Engine's THD "
      "format): each sequence holds documents of N tokens and every token attends only within "
      "its own, so the attention costs seq-len / N causal blocks of N; for mixed lengths give "
      "E[l^2] / E[l]; with --cp the p2p ring, each document in 2 x cp chunks (default 0: one "
      "document per sequence)");
  add("schedule", s("NAME"),
      "pipeline schedule: gpipe; 1f1b (default; Megatron-LM's non-interleaved); interleaved "
      "(Megatron-LM's interleaved 1F1B, needs --vp >= 2); zb-h1 (zero bubble H1, Qi et al. 2024: "
      "backward split into input-gradient B and weight-gradient W, W filling the bubbles)");
  add("microbatch-group-size-per-vp-stage", s("N"),
      "interleaved: micro-batches run per model chunk before moving to the next (Megatron-LM's "
      "--microbatch-group-size-per-virtual-pipeline-stage; default pp)");
  add("rank-order", s("ORDER"),
      "how GPU numbers enumerate the parallel dimensions, innermost first: tp-cp-ep-dp-pp "
      "(Megatron-LM's default: a TP group on one node, pipeline stages outermost) or any order "
      "of the five, e.g. tp-cp-ep-pp-dp (Megatron-LM's --use-tp-pp-dp-mapping)");
  add("partition", s("RULE"),
      "layer-to-stage rule: uniform (Megatron-LM, the default), nanotron, deepspeed-uniform, "
      "deepspeed-parameters, deepspeed-type:REGEX, balanced (trainsim: the contiguous "
      "split whose slowest stage is the least, found exactly; of tied splits the one with "
      "its layers latest), or a Megatron layout such as \"Et*3|t*4|t*4|t*3L\" (E embedding, "
      "t decoder layer, L loss, | stage boundary)");
  add("decoder-first-pipeline-num-layers", s("N"),
      "Megatron-LM: decoder layers on the first stage (uniform partition; with --vp, split "
      "evenly over its chunks)");
  add("decoder-last-pipeline-num-layers", s("N"),
      "Megatron-LM: decoder layers on the last stage (uniform partition; with --vp, split "
      "evenly over its chunks)");
  add("account-for-embedding-in-pipeline-split", po::bool_switch(),
      "Megatron-LM: count the embedding as one layer of the first stage (uniform partition)");
  add("account-for-loss-in-pipeline-split", po::bool_switch(),
      "Megatron-LM: count the loss as one layer of the last stage (uniform partition)");
  add("framework", s("NAME"),
      "whose rules apply where frameworks differ (vocabulary padding, the errors they raise): "
      "megatron (default), nanotron, deepspeed, colossalai; inferred from --partition nanotron or "
      "deepspeed-*");
  add("vocab-divisible-by", s("N"),
      "pad the vocabulary to a multiple of N x tp (default: the framework's, Megatron 128, "
      "ColossalAI 64, nanotron 1)");
}

// Memory, overlap and precision: recomputation, ZeRO, what runs beside what.
void add_memory_and_overlap_flags(po::options_description& d) {
  auto s = value;
  auto add = d.add_options();
  add("recompute", s("NAME"),
      "activation recomputation, replayed as work before each backward: none (default); "
      "selective (the attention core, Megatron-LM's --recompute-granularity selective); full "
      "(every decoder layer's forward, --recompute-granularity full --recompute-method uniform)");
  add("recompute-modules", s("LIST"),
      "what --recompute selective rebuilds, comma-separated (Megatron-Core's --recompute-modules): "
      "core_attn (default: the attention core), layernorm (the two norms), mla_up_proj (MLA's "
      "up-projections and RoPE), mlp (a dense layer's MLP), moe (an MoE layer's MLP, its "
      "all-to-alls run again), moe_act (the experts' activation), shared_experts");
  add("attention-backend", s("NAME"),
      "flash (default): one fused attention kernel; unfused: Megatron-LM's "
      "--attention-backend unfused (and its 2021 implementation), QK^T and PV as batched GEMMs "
      "around a softmax over the s x s scores, which are also kept for the backward; "
      "flash-attn2: Transformer Engine with NVTE_FUSED_ATTN=0 (the flash-attn package's "
      "FlashAttention-2 kernels in place of cuDNN's), the database's time x the platform's "
      "flash_attn2_time_factor");
  add("attention-dropout", s("P"),
      "dropout probability on the attention probabilities (Megatron-LM's flag, whose default is "
      "0.1; here 0, as NeMo's recipes set it): with --attention-backend unfused, PyTorch's "
      "dropout over the s x s probabilities, a pass each way and a 1-byte mask kept for the "
      "backward; a fused kernel draws its mask inside, not priced");
  add("hidden-dropout", s("P"),
      "dropout probability on the hidden states (Megatron-LM's flag, default 0.1; here 0): "
      "after the embedding and in each block's bias-dropout-add, a 1-byte mask written and kept "
      "for the backward, which applies it");
  add("cross-entropy-loss-fusion", po::bool_switch(),
      "Megatron-Core's fused vocabulary-parallel cross-entropy (its native implementation): the "
      "last stage holds a second fp32 copy of its logits while the loss runs (memory only)");
  add("lora-rank", s("N"),
      "LoRA fine-tuning (NeMo's peft LoRA, its dim): every base weight frozen (no weight "
      "gradients, no gradients or optimizer state for it), a rank-N adapter trained beside each "
      "--lora-target-modules linear of every decoder layer, its two GEMMs each way and its TP "
      "calls priced (default 0: every weight trained)");
  add("lora-target-modules", s("LIST"),
      "the linears LoRA adapts, comma-separated: linear_qkv, linear_proj, linear_fc1, "
      "linear_fc2 (NeMo's default: all four; its performance recipes: linear_qkv)");
  add("zero", s("N"),
      "0 (default): gradients all-reduced over DP; 1 or 2: Megatron-LM's distributed optimizer "
      "(gradients reduce-scattered, optimizer state sharded, parameters all-gathered); 3: "
      "parameters also sharded and gathered before every pass");
  add("num-distributed-optimizer-instances", s("N"),
      "distributed optimizer (--zero 1): shard its state over dp x cp / N consecutive ranks, "
      "an instance, instead of all dp x cp; gradients reduce-scattered within an instance and "
      "their shards all-reduced across the N instances, parameters all-gathered within one "
      "(Megatron-LM's flag; default 1)");
  add("overlap-moe-expert-parallel-comm", po::bool_switch(),
      "run the expert all-to-alls beside the MoE layer's compute (Megatron-Core's overlap of "
      "one micro-batch's dispatch with another's compute); needs --ep > 1 and the alltoall "
      "dispatcher");
  add("fp8-param-gather", po::bool_switch(),
      "FP8 primary weights: the decoder's GEMM weights kept in FP8 instead of BF16 and "
      "all-gathered in FP8 by the distributed optimizer (needs --precision fp8 and --zero >= 1)");
  add("grad-reduce-in-bf16", po::bool_switch(),
      "accumulate and reduce gradients over DP in BF16 (2 bytes each) instead of fp32 "
      "(Megatron-LM's flag; NeMo's FP8 recipes and grad_sync_dtype bf16 do this): half the "
      "data-parallel bytes, and the optimizer steps on an fp32 copy of its shard");
  add("optimizer-state", s("NAME"),
      "the optimizer's state per parameter it steps (sharded like it by --zero): fp32 (default; "
      "FP32 master weights and Adam moments, 12 bytes), bf16-moments (Megatron-Core's "
      "--use-precision-aware-optimizer with --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16: FP32 "
      "master weights, BF16 moments, 8 bytes) or bf16 (NeMo 1's distributed_fused_adam with "
      "optim.dtype bf16: BF16 moments, no master copy, 4 bytes); the BF16 kinds need --zero >= 1");
  add("defer-embedding-wgrad-compute", po::bool_switch(),
      "Megatron-LM: the last stage keeps the LM head's input and output gradient and runs its "
      "weight-gradient GEMM after its last backward, in the pipeline flush (needs --pp 2 or more "
      "and the 1f1b or interleaved schedule; NeMo's Llama 3 recipes set it)");
  add("wgrad-deferral-limit", s("N"),
      "with --defer-embedding-wgrad-compute: defer only the first N micro-batches' LM-head "
      "weight gradients (Megatron-LM's flag; default 0: every micro-batch's)");
  add("overlap-grad-reduce", po::bool_switch(),
      "reduce gradients over DP in buckets of max(40M, 1M x dp) parameters during the backward "
      "(Megatron-LM default: off, one bucket at the end)");
  add("overlap-param-gather", po::bool_switch(),
      "distributed optimizer: all-gather the updated parameters during the next forward "
      "(needs --zero >= 1 and --overlap-grad-reduce; Megatron-LM default: off)");
  add("tp-comm-overlap", po::bool_switch(),
      "run each TP all-gather and reduce-scatter beside the GEMM it feeds or follows "
      "(Transformer Engine's userbuffers), the pass waiting where one outlasts its GEMM; needs "
      "--sp (default off: the forward's TP communication exposed)");
  add("no-overlap-p2p-comm", po::bool_switch(),
      "interleaved: wait for pipeline sends and receives on the compute stream (Megatron-LM's "
      "--no-overlap-p2p-communication; by default they run on their own streams)");
  add("precision", s("NAME"), "bf16 (default) or fp8 GEMMs");
  add("fp8-recipe", s("NAME"),
      "with --precision fp8, how Transformer Engine scales FP8 tensors (Megatron-LM's "
      "--fp8-recipe): delayed (default; amax history, reduced over the stage's GPUs each "
      "pass), tensorwise (current scaling: each tensor's amax read just before its cast, "
      "all-reduced over TP where --sp gathers it), blockwise (a scale per 128-element block, "
      "computed in the cast); mxfp8 needs Blackwell GPUs");
  add("gpus", s("N"), "cluster size; must equal tp x pp x dp x cp when given");
}

}  // namespace

po::options_description plan_options() {
  po::options_description d("Plan (Megatron-LM names; a flag overrides the scenario's value)");
  add_parallel_flags(d);
  add_batch_and_schedule_flags(d);
  add_memory_and_overlap_flags(d);
  return d;
}

}  // namespace trainsim
