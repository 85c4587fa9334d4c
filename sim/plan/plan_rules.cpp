// The rules a plan must meet before anything is priced, each failing as bad input that names the
// flag or JSON path at fault. validate_plan runs them in a fixed order, so that a plan with
// several faults always reports the same one.
#include <string>
#include <utility>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/context_rules.hpp"
#include "sim/plan/deferral_rules.hpp"
#include "sim/plan/expert_rules.hpp"
#include "sim/plan/lora_rules.hpp"
#include "sim/plan/optimizer_rules.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {

namespace {

void require_divides(const PlanOrigin& origin, const char* field, std::int64_t divisor,
                     const char* what, std::int64_t value) {
  if (value % divisor != 0) {
    fail_input(origin.of(field), "must divide " + std::string(what) + " (" + std::to_string(value) +
                                     "), got " + std::to_string(divisor));
  }
}

// torchtitan's per-operator checkpointing, as modelled: a dense decoder layer of separate
// projections (Llama's), fused attention, no adapters (each would shift the matmul count).
void validate_op_recompute(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  const std::string what =
      "op (torchtitan's per-operator checkpointing) is modelled with fused attention and "
      "grouped experts; ";
  if (model.moe.is_moe() && !plan.moe_grouped_gemm) {
    fail_input(origin.of("recompute"), what + "not with " + origin.name("moe_grouped_gemm") +
                                           " off (each expert's own matmuls would shift the "
                                           "count)");
  }
  if (plan.attention_backend == AttentionBackend::kUnfused) {
    fail_input(origin.of("recompute"), what + "not with " + origin.name("attention_backend") +
                                           " unfused: use flash or flash-attn2");
  }
  if (plan.lora()) {
    fail_input(origin.of("recompute"),
               what + "not under LoRA (the adapters' matmuls would shift the count)");
  }
}

// Options that need another option, the model or the platform to mean anything.
void validate_option_pairs(const Plan& plan, const Model& model, const Platform& platform,
                           const PlanOrigin& origin) {
  if (plan.seq_len <= 0) fail_input(origin.of("seq_len"), "is required (a positive integer)");
  if (plan.recompute_modules != kRecomputeCoreAttn && plan.recompute != Recompute::kSelective) {
    fail_input(
        origin.of("recompute_modules"),
        "needs " + origin.name("recompute") + " selective (got " + to_string(plan.recompute) + ")");
  }
  if (plan.recompute_method != RecomputeMethod::kBlock && plan.recompute != Recompute::kFull) {
    fail_input(origin.of("recompute_method"), "needs " + origin.name("recompute") + " full (got " +
                                                  to_string(plan.recompute) + ")");
  }
  if (plan.recompute_num_layers > 0 && plan.recompute != Recompute::kFull) {
    fail_input(
        origin.of("recompute_num_layers"),
        "needs " + origin.name("recompute") + " full (got " + to_string(plan.recompute) + ")");
  }
  if (plan.recompute == Recompute::kOp) validate_op_recompute(plan, model, origin);
  if ((plan.recompute_modules & kRecomputeMlaUpProj) != 0 && !model.mla.is_mla()) {
    fail_input(origin.of("recompute_modules"),
               "mla_up_proj needs a model with multi-head latent attention (Megatron-Core's rule)");
  }
  if (plan.attention_backend == AttentionBackend::kFlashAttn2 &&
      !platform.flash_attn2_time_factor) {
    fail_input(origin.of("attention_backend"),
               "flash-attn2 needs the platform's attention_backends.flash_attn2_time_factor "
               "(FlashAttention-2's time over the kernel database's fused attention); " +
                   platform.name + " has none");
  }
  if (model.mtp_layers > 0 && plan.effective_framework() != Framework::kMegatron) {
    fail_input(origin.of("mtp_num_layers"),
               std::string("multi-token prediction is Megatron-Core's; ") +
                   to_string(plan.effective_framework()) + " builds none (use 0)");
  }
}

// Refuses a step of more than `limit` passes (micro-batches x chunks) over `ranks` replayed ranks,
// described as `ranks_text`; a larger micro-batch or a smaller batch is the way out.
void refuse_passes_over(const Plan& plan, const PlanOrigin& origin, std::int64_t ranks,
                        const std::string& ranks_text, double limit,
                        const std::string& limit_text) {
  const double passes = static_cast<double>(ranks) * static_cast<double>(plan.vp) *
                        static_cast<double>(plan.num_microbatches());
  if (passes <= limit) return;
  fail_input(origin.of("gbs"),
             "gives " + format_grouped(plan.num_microbatches()) + " micro-batches per step on " +
                 ranks_text + (plan.vp > 1 ? " x " + std::to_string(plan.vp) + " chunks" : "") +
                 ": more than " + limit_text + "; use a larger " + origin.name("mbs") +
                 " or a smaller " + origin.name("gbs"));
}

// Bounds that keep every product below int64 and the task graph within a machine's memory.
void validate_sizes(const Plan& plan, const PlanOrigin& origin) {
  constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;
  constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 24;
  constexpr double kMaxReplayedPasses = 1e8;  // GPUs x micro-batches x chunks
  // One GPU per pipeline stage is replayed at the least (symmetric replay), at about 2 kB of
  // task graph per pass: 4e6 passes hold some 8 GB, and no real run comes near them (pp 128 x
  // vp 12 x 1,024 micro-batches is 1.6e6).
  constexpr double kMaxStagePasses = 4e6;  // pipeline stages x micro-batches x chunks
  if (plan.seq_len > kMaxSeqLen) {
    fail_input(origin.of("seq_len"), "must be at most " + format_grouped(kMaxSeqLen) +
                                         " tokens, got " + format_grouped(plan.seq_len));
  }
  std::int64_t gpus = 1;
  for (const auto& [field, size] : {std::pair{"tp", plan.tp}, std::pair{"pp", plan.pp},
                                    std::pair{"dp", plan.dp}, std::pair{"cp", plan.cp}}) {
    if (size > kMaxGpus / gpus) {
      fail_input(origin.of(field), "makes the plan larger than " + format_grouped(kMaxGpus) +
                                       " GPUs, the most trainsim simulates");
    }
    gpus *= size;
  }
  if (plan.mbs > kMaxSeqLen) {
    fail_input(origin.of("mbs"), "must be at most " + format_grouped(kMaxSeqLen) + ", got " +
                                     format_grouped(plan.mbs));
  }
  constexpr std::int64_t kMaxTokensPerStep = std::int64_t{1} << 40;
  if (plan.global_batch() > kMaxTokensPerStep / plan.seq_len) {
    fail_input(origin.of("gbs"), "times seq-len gives " + format_grouped(plan.global_batch()) +
                                     " x " + format_grouped(plan.seq_len) +
                                     " tokens per step, more than trainsim handles (" +
                                     format_grouped(kMaxTokensPerStep) + ")");
  }
  refuse_passes_over(plan, origin, gpus, format_grouped(gpus) + " GPUs", kMaxReplayedPasses,
                     "the 100,000,000 passes per step trainsim can replay");
  refuse_passes_over(plan, origin, plan.pp, std::to_string(plan.pp) + " pipeline stages",
                     kMaxStagePasses,
                     "the 4,000,000 passes of one GPU per stage trainsim replays in a machine's "
                     "memory");
}

// The schedule's options: virtual stages, micro-batch groups and the overlapped exchanges.
void validate_schedule_options(const Plan& plan, const PlanOrigin& origin) {
  if (plan.vp > 1 && plan.schedule != ScheduleKind::kInterleaved) {
    fail_input(origin.of("vp"), "virtual stages need " + origin.name("schedule") +
                                    " interleaved (got " + std::string(to_string(plan.schedule)) +
                                    ")");
  }
  if (plan.schedule == ScheduleKind::kInterleaved) {
    if (plan.vp < 2)
      fail_input(origin.of("schedule"), "interleaved needs " + origin.name("vp") + " 2 or more");
    if (plan.pp < 2)
      fail_input(origin.of("schedule"), "interleaved needs " + origin.name("pp") + " 2 or more");
  }
  if (plan.microbatch_group_size_per_vp_stage > 0 && plan.schedule != ScheduleKind::kInterleaved) {
    fail_input(origin.of("microbatch_group_size_per_vp_stage"),
               "applies to the interleaved schedule only");
  }
  // Only the interleaved schedule takes either value; the others' is fixed, and giving it (as a
  // report's plan does) changes nothing.
  const bool fixed = plan.schedule == ScheduleKind::kZBH1;
  if (plan.overlap_p2p_comm && plan.schedule != ScheduleKind::kInterleaved &&
      *plan.overlap_p2p_comm != fixed) {
    fail_input(origin.of("overlap_p2p_comm"),
               "applies to the interleaved schedule only: gpipe and 1f1b wait for their exchanges "
               "on the compute stream (Megatron-LM turns the overlap off for them) and zb-h1 "
               "always posts them asynchronously");
  }
}

// Communication overlaps, the optimizer's sharding and the precision, as Megatron-LM and
// DeepSpeed accept them.
void validate_overlap_and_optimizer(const Plan& plan, const Platform& platform,
                                    const PlanOrigin& origin) {
  if (plan.tp_comm_overlap && plan.tp == 1) {
    fail_input(origin.of("tp_comm_overlap"), "needs " + origin.name("tp") + " 2 or more");
  }
  if (plan.tp_comm_overlap && !plan.sp) {
    // Megatron-LM: "Tensor parallel communication/GEMM overlap can happen only when sequence
    // parallelism is enabled".
    fail_input(origin.of("tp_comm_overlap"),
               "needs " + origin.name("sp") + " (sequence parallelism)");
  }
  if (plan.overlap_param_gather && !plan.distributed_optimizer()) {
    fail_input(origin.of("overlap_param_gather"), "needs the distributed optimizer (" +
                                                      origin.name("zero") +
                                                      " 1 or more), as in Megatron-LM");
  }
  if (plan.fp8_param_gather &&
      (plan.precision != Precision::kFP8 || !plan.distributed_optimizer())) {
    fail_input(origin.of("fp8_param_gather"),
               "needs " + origin.name("precision") + " fp8 and the distributed optimizer (" +
                   origin.name("zero") + " 1 or more), as in Megatron-LM");
  }
  if (plan.overlap_param_gather && !plan.overlap_grad_reduce) {
    fail_input(origin.of("overlap_param_gather"),
               "needs " + origin.name("overlap_grad_reduce") +
                   ", as in Megatron-LM (the gathers reuse its buckets)");
  }
  if (plan.zero < 0 || plan.zero > 3) {
    fail_input(origin.of("zero"),
               "must be a ZeRO stage in [0, 3], got " + std::to_string(plan.zero));
  }
  if (plan.zero >= 2 && plan.pp > 1) {
    fail_input(origin.of("zero"),
               "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism "
               "(DeepSpeed's PipelineEngine asserts it); use " +
                   origin.name("zero") + " 1 or " + origin.name("pp") + " 1");
  }
  if (plan.precision == Precision::kFP8 && platform.gpu.peak_fp8_flops <= 0) {
    fail_input(origin.of("precision"), "fp8 needs FP8 tensor cores; " + platform.gpu.name +
                                           " has none (platform " + platform.name + ")");
  }
  if (plan.fp8_recipe != Fp8Recipe::kDelayed && plan.precision != Precision::kFP8) {
    fail_input(origin.of("fp8_recipe"), "scales FP8 tensors, so it needs " +
                                            origin.name("precision") + " fp8 (got " +
                                            to_string(plan.precision) + ")");
  }
  if (plan.fp8_recipe == Fp8Recipe::kMxfp8) {
    fail_input(origin.of("fp8_recipe"),
               "mxfp8 runs on Blackwell's tensor cores (compute capability 10); " +
                   platform.gpu.name + " has none: use delayed, tensorwise or blockwise");
  }
}

void validate_shapes(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  // Shapes every framework must split evenly (vocabularies are padded instead; see check/).
  require_divides(origin, "tp", plan.tp, "the attention heads", model.num_attention_heads);
  require_divides(origin, "tp", plan.tp, "the KV heads", model.num_kv_heads);
  require_divides(origin, "tp", plan.tp, "the FFN hidden size", model.ffn_hidden_size);
  if (plan.pp > model.num_layers) {
    fail_input(origin.of("pp"),
               "exceeds the number of layers (" + std::to_string(model.num_layers) + ")");
  }
  const std::int64_t per_step = plan.mbs * plan.dp;
  if (plan.gbs > 0 && plan.gbs < per_step) {
    // Where dp is what the GPU count leaves (no dp given), say what would leave less.
    const bool dp_from_gpus = origin.where.contains("gpus") && origin.of("dp") == origin.of("gpus");
    fail_input(
        origin.of("gbs"),
        "must be at least mbs x dp (" + std::to_string(plan.mbs) + " x " + std::to_string(plan.dp) +
            " = " + std::to_string(per_step) + "), got " + std::to_string(plan.gbs) +
            (dp_from_gpus ? "; dp " + std::to_string(plan.dp) + " is what " + origin.of("gpus") +
                                " " + std::to_string(plan.gpus) + " leaves over tp x cp x pp = " +
                                std::to_string(plan.model_parallel_size()) +
                                ": more of them (--tp, --cp, --pp) leave less, or give a "
                                "larger --gbs"
                          : ""));
  }
}

void validate_interleaving(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  // Megatron-LM counts the embedding and the loss as layers when told to account for them.
  const std::int64_t units = model.num_layers +
                             (plan.account_for_embedding_in_pipeline_split ? 1 : 0) +
                             (plan.account_for_loss_in_pipeline_split ? 1 : 0);
  if (plan.schedule == ScheduleKind::kInterleaved && plan.pp * plan.vp > units) {
    fail_input(origin.of("vp"),
               "pp x vp = " + std::to_string(plan.pp * plan.vp) +
                   " virtual stages exceed the number of layers (" + std::to_string(units) +
                   (units > model.num_layers ? ", embedding and loss included" : "") + ")");
  }
  if (plan.schedule == ScheduleKind::kInterleaved) {
    const ScheduleConfig sc = schedule_config(plan);
    const std::string problem = interleaving_problem(sc);
    if (!problem.empty()) {
      fail_input(origin.of(plan.microbatch_group_size_per_vp_stage > 0
                               ? "microbatch_group_size_per_vp_stage"
                               : "gbs"),
                 "Megatron-LM's interleaved schedule refuses " + std::to_string(sc.microbatches) +
                     " micro-batches per step with pp " + std::to_string(plan.pp) +
                     " and groups of " +
                     std::to_string(sc.group_size > 0 ? sc.group_size : plan.pp) + ": " + problem);
    }
  }
}

// The plan against its own totals, the model's positions and its partition rule.
void validate_totals(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  if (plan.gpus > 0 && plan.gpus != plan.world_size()) {
    fail_input(origin.of("gpus"), "is " + std::to_string(plan.gpus) + " but tp x pp x dp" +
                                      (plan.cp > 1 ? " x cp" : "") + " = " +
                                      std::to_string(plan.tp) + " x " + std::to_string(plan.pp) +
                                      " x " + std::to_string(plan.dp) +
                                      (plan.cp > 1 ? " x " + std::to_string(plan.cp) : "") + " = " +
                                      std::to_string(plan.world_size()));
  }
  if (model.position_embedding == PositionEmbedding::kLearned &&
      plan.seq_len > model.max_position_embeddings) {
    fail_input(origin.of("seq_len"), "exceeds the model's learned positions (" +
                                         std::to_string(model.max_position_embeddings) + ")");
  }
  if (plan.uneven_stage_options() && plan.partition != "uniform") {
    const char* field =
        plan.decoder_first_pipeline_num_layers >= 0    ? "decoder_first_pipeline_num_layers"
        : plan.decoder_last_pipeline_num_layers >= 0   ? "decoder_last_pipeline_num_layers"
        : plan.account_for_embedding_in_pipeline_split ? "account_for_embedding_in_pipeline_split"
                                                       : "account_for_loss_in_pipeline_split";
    fail_input(origin.of(field), "is a Megatron-LM option of the uniform partition, not of \"" +
                                     plan.partition + "\"");
  }
}

}  // namespace

void validate_plan(const Plan& plan, const Model& model, const Platform& platform,
                   const PlanOrigin& origin) {
  validate_option_pairs(plan, model, platform, origin);
  validate_sizes(plan, origin);
  validate_schedule_options(plan, origin);
  validate_overlap_and_optimizer(plan, platform, origin);
  validate_shapes(plan, model, origin);
  validate_context_parallelism(plan, model, origin);
  validate_packing(plan, origin);
  validate_lora(plan, model, origin);
  validate_expert_parallelism(plan, model, origin);
  validate_optimizer_instances(plan, origin);
  validate_optimizer_state(plan, origin);
  validate_wgrad_deferral(plan, model, origin);
  validate_interleaving(plan, model, origin);
  validate_totals(plan, model, origin);
}

}  // namespace trainsim
