// The plan schema's rows for memory, overlap and precision: recomputation, attention, LoRA,
// ZeRO and the optimizer's state, what runs beside what, and the GEMMs' number format.
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/lora_modules.hpp"
#include "sim/plan/plan_field_table.hpp"
#include "sim/plan/recompute_modules.hpp"

namespace trainsim {

namespace {

using J = nlohmann::ordered_json;

// Recompute modules as Megatron-Core names them, or the reason they are not.
void check_recompute_modules(const std::string& where, const std::string& value) {
  if (!parse_recompute_modules(value)) {
    fail_input(where, "must name modules among " + recompute_module_names() +
                          ", each once, joined by ',' (Megatron-LM's default: core_attn), got '" +
                          value + "'");
  }
}

// LoRA target modules as Megatron-Core names the linears, or the reason they are not.
void check_lora_modules(const std::string& where, const std::string& value) {
  if (!parse_lora_modules(value)) {
    fail_input(where, "must name modules among " + lora_module_names() +
                          ", each once, joined by ',' (NeMo's default: all four), got '" + value +
                          "'");
  }
}

// " (core_attn,mlp)" where selective recomputation rebuilds other modules than Megatron-LM's
// default (the attention core), " (first 2 layers of each chunk)" where full recomputation takes
// part of the layers, else nothing: how the options line and a label name them.
std::string modules_named(const Plan& p) {
  if (p.recompute_group() > 1) {
    return " (groups of " + std::to_string(p.recompute_group()) + " layers)";
  }
  if (p.partially_recomputes()) {
    const auto n = p.recompute_num_layers;
    return " (first " + std::to_string(n) + (n == 1 ? " layer" : " layers") + " of each chunk)";
  }
  if (p.recompute != Recompute::kSelective || p.recompute_modules == kRecomputeCoreAttn) return "";
  return " (" + recompute_modules_text(p.recompute_modules) + ")";
}

// Activation recomputation and the attention core's backend and dropouts.
void recompute_and_attention_fields(FieldTable& t) {
  t.named("recompute", {Recompute::kNone, Recompute::kSelective, Recompute::kFull, Recompute::kOp},
          &Plan::recompute, "NAME",
          "activation recomputation, replayed as work before each backward: none (default); "
          "selective (the attention core, Megatron-LM's --recompute-granularity selective); full "
          "(every decoder layer's forward, --recompute-granularity full --recompute-method "
          "uniform --recompute-num-layers 1; --recompute-num-layers N takes part of them); op "
          "(torchtitan's per-operator checkpointing, selective_ac_option 'op': each layer keeps "
          "the attention's output and every other matmul's, the rest runs again)")
      .describe = [](const Plan& p) {
    return p.recompute == Recompute::kNone
               ? std::string()
               : std::string(to_string(p.recompute)) + " recompute" + modules_named(p);
  };
  t.fields.back().label = [](const Plan& p) {
    return p.recompute == Recompute::kNone
               ? std::string()
               : "recompute " + std::string(to_string(p.recompute)) + modules_named(p);
  };
  t.text(
      "recompute_modules", FieldType::kParsed,
      [](Plan& p, const std::string& s) { p.recompute_modules = *parse_recompute_modules(s); },
      check_recompute_modules,
      FieldTable::only_if(
          [](const Plan& p) { return p.recompute == Recompute::kSelective; },
          [](const Plan& p) { return J(recompute_modules_text(p.recompute_modules)); }),
      "LIST",
      "what --recompute selective rebuilds, comma-separated (Megatron-Core's --recompute-modules): "
      "core_attn (default: the attention core), layernorm (the two norms), mla_up_proj (MLA's "
      "up-projections and RoPE), mlp (a dense layer's MLP), moe (an MoE layer's MLP, its "
      "all-to-alls run again), moe_act (the experts' activation), shared_experts");
  t.integer("recompute_num_layers", {0}, &Plan::recompute_num_layers, "N",
            "with --recompute full: the first N decoder layers of each model chunk keep only "
            "their input and run their forward again before the backward, the others keep their "
            "activations (Megatron-LM's --recompute-method block --recompute-num-layers N; "
            "default 0: every layer); with --recompute-method uniform, every layer in groups of N")
      .report = FieldTable::unless_default(FieldTable::of(&Plan::recompute_num_layers));
  t.named("recompute_method", {RecomputeMethod::kBlock, RecomputeMethod::kUniform},
          &Plan::recompute_method, "NAME",
          "how --recompute full takes --recompute-num-layers N (Megatron-LM's "
          "--recompute-method): block (default), the first N layers of each chunk; uniform, "
          "every layer, N consecutive ones checkpointed together: one input kept per group, "
          "the group's N layers rebuilt at once in its backward")
      .report = FieldTable::unless_default(FieldTable::of(&Plan::recompute_method));
  t.named("attention_backend",
          {AttentionBackend::kFlash, AttentionBackend::kUnfused, AttentionBackend::kFlashAttn2},
          &Plan::attention_backend, "NAME",
          "flash (default): one fused attention kernel; unfused: Megatron-LM's "
          "--attention-backend unfused (and its 2021 implementation), QK^T and PV as batched "
          "GEMMs around a softmax over the s x s scores, which are also kept for the backward; "
          "flash-attn2: Transformer Engine with NVTE_FUSED_ATTN=0 (the flash-attn package's "
          "FlashAttention-2 kernels in place of cuDNN's), the database's time x the platform's "
          "flash_attn2_time_factor")
      .describe = [](const Plan& p) {
    return p.attention_backend == AttentionBackend::kFlash
               ? std::string()
               : std::string(to_string(p.attention_backend)) + " attention";
  };
  t.real("attention_dropout", &Plan::attention_dropout, {0.0, true, 1.0, false}, "P",
         "dropout probability on the attention probabilities (Megatron-LM's flag, whose default "
         "is 0.1; here 0, as NeMo's recipes set it): with --attention-backend unfused, PyTorch's "
         "dropout over the s x s probabilities, a pass each way and a 1-byte mask kept for the "
         "backward; a fused kernel draws its mask inside, not priced")
      .report = FieldTable::unless_default(FieldTable::of(&Plan::attention_dropout));
  t.fields.back().describe = [](const Plan& p) {
    return p.attention_dropout > 0 ? "attention dropout " + format_fixed(p.attention_dropout, 2)
                                   : std::string();
  };
  t.real("hidden_dropout", &Plan::hidden_dropout, {0.0, true, 1.0, false}, "P",
         "dropout probability on the hidden states (Megatron-LM's flag, default 0.1; here 0): "
         "after the embedding and in each block's bias-dropout-add, a 1-byte mask written and "
         "kept for the backward, which applies it")
      .report = FieldTable::unless_default(FieldTable::of(&Plan::hidden_dropout));
  t.fields.back().describe = [](const Plan& p) {
    return p.hidden_dropout > 0 ? "hidden dropout " + format_fixed(p.hidden_dropout, 2)
                                : std::string();
  };
  t.flag("cross_entropy_loss_fusion", &Plan::cross_entropy_loss_fusion,
         "Megatron-Core's fused vocabulary-parallel cross-entropy (its native implementation): "
         "the last stage holds a second fp32 copy of its logits while the loss runs (memory "
         "only)")
      .report = FieldTable::unless_default(FieldTable::of(&Plan::cross_entropy_loss_fusion));
  t.fields.back().describe =
      FieldTable::says(&Plan::cross_entropy_loss_fusion, "fused cross-entropy");
}

// LoRA fine-tuning.
void lora_fields(FieldTable& t) {
  const auto lora = [](const Plan& p) { return p.lora(); };
  t.integer("lora_rank", {0, std::int64_t{1} << 16}, &Plan::lora_rank, "N",
            "LoRA fine-tuning (NeMo's peft LoRA, its dim): every base weight frozen (no weight "
            "gradients, no gradients or optimizer state for it), a rank-N adapter trained beside "
            "each --lora-target-modules linear of every decoder layer, its two GEMMs each way and "
            "its TP calls priced (default 0: every weight trained)")
      .report = FieldTable::only_if(lora, FieldTable::of(&Plan::lora_rank));
  t.fields.back().describe = [](const Plan& p) {
    return p.lora() ? "LoRA rank " + std::to_string(p.lora_rank) + " on " +
                          lora_modules_text(p.lora_target_modules) + ", base weights frozen"
                    : std::string();
  };
  t.text(
      "lora_target_modules", FieldType::kParsed,
      [](Plan& p, const std::string& s) { p.lora_target_modules = *parse_lora_modules(s); },
      check_lora_modules,
      FieldTable::only_if(
          lora, [](const Plan& p) { return J(lora_modules_text(p.lora_target_modules)); }),
      "LIST",
      "the linears LoRA adapts, comma-separated: linear_qkv, linear_proj, linear_fc1, "
      "linear_fc2 (NeMo's default: all four; its performance recipes: linear_qkv)");
}

// ZeRO, the distributed optimizer and what its state and gradients are kept in.
void optimizer_fields(FieldTable& t) {
  t.integer("zero", {0, 3}, &Plan::zero, "N",
            "0 (default): gradients all-reduced over DP; 1 or 2: Megatron-LM's distributed "
            "optimizer (gradients reduce-scattered, optimizer state sharded, parameters "
            "all-gathered); 3: parameters also sharded and gathered before every pass")
      .describe = [](const Plan& p) {
    const auto n = p.num_distributed_optimizer_instances;
    if (p.zero == 3) {
      return "zero 3" + (n > 1 ? " (hybrid, " + std::to_string(n) + " instances)" : std::string());
    }
    if (p.zero == 0) return std::string();
    return "distributed optimizer (zero " + std::to_string(p.zero) +
           (n > 1 ? ", " + std::to_string(n) + " instances" : "") + ")";
  };
  t.fields.back().label = [](const Plan& p) {
    const auto n = p.num_distributed_optimizer_instances;
    if (p.zero == 0) return std::string();
    return "zero " + std::to_string(p.zero) +
           (n > 1 ? " x " + std::to_string(n) + " instances" : "");
  };
  t.integer("num_distributed_optimizer_instances", {}, &Plan::num_distributed_optimizer_instances,
            "N",
            "distributed optimizer (--zero 1): shard its state over dp x cp / N consecutive "
            "ranks, an instance, instead of all dp x cp; gradients reduce-scattered within an "
            "instance and their shards all-reduced across the N instances, parameters "
            "all-gathered within one (Megatron-LM's flag; default 1); with --zero 3 hybrid "
            "sharding (HSDP, PyTorch FSDP's replicate degree N): the weights sharded within an "
            "instance and gathered there before each pass")
      .report =
      FieldTable::unless_default(FieldTable::of(&Plan::num_distributed_optimizer_instances));
  t.flag("overlap_moe_expert_parallel_comm", &Plan::moe_a2a_overlap,
         "run the expert all-to-alls beside the MoE layer's compute (Megatron-Core's overlap of "
         "one micro-batch's dispatch with another's compute); needs --ep > 1 and the alltoall "
         "dispatcher")
      .describe = FieldTable::says(&Plan::moe_a2a_overlap, "expert all-to-all overlap");
  t.fields.back().label = FieldTable::says(&Plan::moe_a2a_overlap, "ep-overlap");
  t.flag("fp8_param_gather", &Plan::fp8_param_gather,
         "FP8 primary weights: the decoder's GEMM weights kept in FP8 instead of BF16 and "
         "all-gathered in FP8 by the distributed optimizer (needs --precision fp8 and --zero >= "
         "1)")
      .describe = FieldTable::says(&Plan::fp8_param_gather, "fp8 param gather");
  t.flag("grad_reduce_in_bf16", &Plan::grad_reduce_in_bf16,
         "accumulate and reduce gradients over DP in BF16 (2 bytes each) instead of fp32 "
         "(Megatron-LM's flag; NeMo's FP8 recipes and grad_sync_dtype bf16 do this): half the "
         "data-parallel bytes, and the optimizer steps on an fp32 copy of its shard")
      .describe = FieldTable::says(&Plan::grad_reduce_in_bf16, "bf16 grad reduce");
  t.named("optimizer_state",
          {OptimizerState::kFp32, OptimizerState::kBf16Moments, OptimizerState::kBf16},
          &Plan::optimizer_state, "NAME",
          "the optimizer's state per parameter it steps (sharded like it by --zero): fp32 "
          "(default; FP32 master weights and Adam moments, 12 bytes), bf16-moments "
          "(Megatron-Core's --use-precision-aware-optimizer with --exp-avg-dtype bf16 "
          "--exp-avg-sq-dtype bf16: FP32 master weights, BF16 moments, 8 bytes) or bf16 (NeMo "
          "1's distributed_fused_adam with optim.dtype bf16: BF16 moments, no master copy, 4 "
          "bytes); the BF16 kinds need --zero >= 1");
  auto& state = t.fields.back();
  state.report = FieldTable::unless_default(state.report);
  state.describe = [](const Plan& p) {
    return p.optimizer_state == OptimizerState::kFp32
               ? std::string()
               : std::string(to_string(p.optimizer_state)) + " optimizer state";
  };
  state.label = [](const Plan& p) {
    return p.optimizer_state == OptimizerState::kFp32
               ? std::string()
               : std::string(to_string(p.optimizer_state)) + " optimizer";
  };
}

// The LM head's deferred weight gradients and the overlap switches.
void overlap_fields(FieldTable& t) {
  t.flag("defer_embedding_wgrad_compute", &Plan::defer_embedding_wgrad_compute,
         "Megatron-LM: the last stage keeps the LM head's input and output gradient and runs its "
         "weight-gradient GEMM after its last backward, in the pipeline flush (needs --pp 2 or "
         "more and the 1f1b or interleaved schedule; NeMo's Llama 3 recipes set it)")
      .report = FieldTable::unless_default(FieldTable::of(&Plan::defer_embedding_wgrad_compute));
  t.fields.back().describe = [](const Plan& p) {
    if (!p.defer_embedding_wgrad_compute) return std::string();
    return p.wgrad_deferral_limit > 0
               ? "LM-head wgrad of " + std::to_string(p.wgrad_deferral_limit) +
                     " micro-batches deferred to the flush"
               : std::string("LM-head wgrad deferred to the flush");
  };
  t.fields.back().label = [](const Plan& p) {
    if (!p.defer_embedding_wgrad_compute) return std::string();
    const auto n = p.wgrad_deferral_limit;
    return "defer-wgrad" + (n > 0 ? " " + std::to_string(n) : std::string());
  };
  t.integer("wgrad_deferral_limit", {0}, &Plan::wgrad_deferral_limit, "N",
            "with --defer-embedding-wgrad-compute: defer only the first N micro-batches' LM-head "
            "weight gradients (Megatron-LM's flag; default 0: every micro-batch's)")
      .report = FieldTable::only_if([](const Plan& p) { return p.defer_embedding_wgrad_compute; },
                                    FieldTable::of(&Plan::wgrad_deferral_limit));
  t.flag("overlap_grad_reduce", &Plan::overlap_grad_reduce,
         "reduce gradients over DP in buckets of max(40M, 1M x dp) parameters during the "
         "backward (Megatron-LM default: off, one bucket at the end)")
      .describe = FieldTable::says(&Plan::overlap_grad_reduce, "overlap grad reduce");
  t.fields.back().label = FieldTable::says(&Plan::overlap_grad_reduce, "grad-overlap");
  t.flag("grad_reduce_per_microbatch", &Plan::grad_reduce_per_microbatch,
         "reduce gradients over DP after every micro-batch's backward, not only the last one's "
         "(PyTorch FSDP and DDP under gradient accumulation, as torchtitan runs them); default "
         "off: once a step, as Megatron-LM; always on with --framework deepspeed at --zero 2 "
         "or 3, as DeepSpeed reduces there")
      .describe = [](const Plan& p) {
    return p.reduces_every_microbatch() ? "grad reduce per micro-batch" : "";
  };
  t.fields.back().label = [](const Plan& p) {
    return p.reduces_every_microbatch() ? "grad-per-mb" : "";
  };
  t.fields.back().report = FieldTable::unless_default(
      [](const Plan& p) { return nlohmann::ordered_json(p.reduces_every_microbatch()); });
  t.flag("overlap_param_gather", &Plan::overlap_param_gather,
         "distributed optimizer: all-gather the updated parameters during the next forward "
         "(needs --zero >= 1 and --overlap-grad-reduce; Megatron-LM default: off)")
      .describe = FieldTable::says(&Plan::overlap_param_gather, "overlap param gather");
  t.fields.back().label = FieldTable::says(&Plan::overlap_param_gather, "param-overlap");
  t.flag("tp_comm_overlap", &Plan::tp_comm_overlap,
         "run each TP all-gather and reduce-scatter beside the GEMM it feeds or follows "
         "(Transformer Engine's userbuffers), the pass waiting where one outlasts its GEMM; "
         "needs --sp (default off: the forward's TP communication exposed)")
      .describe = FieldTable::says(&Plan::tp_comm_overlap, "tp comm overlap");
  t.fields.back().label = FieldTable::says(&Plan::tp_comm_overlap, "tp-overlap");
  t.add({"overlap_p2p_comm",
         FieldType::kBool,
         {},
         {},
         [](Plan& p, std::int64_t v, const std::string&) { p.overlap_p2p_comm = v != 0; }},
        "",
        "interleaved: wait for pipeline sends and receives on the compute stream (Megatron-LM's "
        "--no-overlap-p2p-communication; by default they run on their own streams)",
        [](const Plan& p) { return J(p.p2p_overlap()); });
  auto& p2p = t.fields.back();
  p2p.negated = true;
  p2p.describe = [](const Plan& p) { return p.p2p_overlap() ? "overlap p2p comm" : ""; };
}

}  // namespace

void memory_and_overlap_fields(FieldTable& t) {
  recompute_and_attention_fields(t);
  lora_fields(t);
  optimizer_fields(t);
  overlap_fields(t);
  t.named("precision", {Precision::kBF16, Precision::kFP8}, &Plan::precision, "NAME",
          "bf16 (default) or fp8 GEMMs")
      .label = [](const Plan& p) {
    return p.precision == Precision::kBF16 ? std::string() : std::string(to_string(p.precision));
  };
  t.named("fp8_recipe",
          {Fp8Recipe::kDelayed, Fp8Recipe::kTensorwise, Fp8Recipe::kBlockwise, Fp8Recipe::kMxfp8},
          &Plan::fp8_recipe, "NAME",
          "with --precision fp8, how Transformer Engine scales FP8 tensors (Megatron-LM's "
          "--fp8-recipe): delayed (default; amax history, reduced over the stage's GPUs each "
          "pass), tensorwise (current scaling: each tensor's amax read just before its cast, "
          "all-reduced over TP where --sp gathers it), blockwise (a scale per 128-element block, "
          "computed in the cast); mxfp8 needs Blackwell GPUs");
  auto& recipe = t.fields.back();
  recipe.report = FieldTable::unless_default(recipe.report);
  recipe.label = [](const Plan& p) {
    return p.fp8_recipe == Fp8Recipe::kDelayed ? std::string()
                                               : std::string(to_string(p.fp8_recipe));
  };
  t.integer("gpus", {}, &Plan::gpus, "N",
            "cluster size: without dp, dp is the GPUs tp x cp x pp leave over; with dp, it "
            "must equal tp x cp x pp x dp")
      .report = nullptr;  // the report's top-level gpus
}

}  // namespace trainsim
