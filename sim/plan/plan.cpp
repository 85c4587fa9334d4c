#include "sim/plan/plan.hpp"

#include <utility>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/deferral_rules.hpp"
#include "sim/plan/expert_rules.hpp"
#include "sim/plan/optimizer_rules.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {

const char* to_string(Precision p) {
  return p == Precision::kBF16 ? "bf16" : "fp8";
}

const char* to_string(ScheduleKind s) {
  switch (s) {
    case ScheduleKind::kGPipe:
      return "gpipe";
    case ScheduleKind::k1F1B:
      return "1f1b";
    case ScheduleKind::kInterleaved:
      return "interleaved";
    case ScheduleKind::kZBH1:
      return "zb-h1";
  }
  return "?";
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

const char* to_string(AttentionBackend a) {
  switch (a) {
    case AttentionBackend::kUnfused:
      return "unfused";
    case AttentionBackend::kFlashAttn2:
      return "flash-attn2";
    case AttentionBackend::kFlash:
      break;
  }
  return "flash";
}

const char* to_string(CpComm c) {
  switch (c) {
    case CpComm::kP2P:
      return "p2p";
    case CpComm::kA2A:
      return "a2a";
    case CpComm::kAllGather:
      return "allgather";
  }
  return "?";
}

const char* to_string(MoeDispatcher d) {
  return d == MoeDispatcher::kAllGather ? "allgather" : "alltoall";
}

const char* to_string(Framework f) {
  switch (f) {
    case Framework::kMegatron:
      return "megatron";
    case Framework::kNanotron:
      return "nanotron";
    case Framework::kDeepSpeed:
      return "deepspeed";
    case Framework::kColossalAI:
      return "colossalai";
  }
  return "?";
}

Framework Plan::effective_framework() const {
  if (framework) return *framework;
  if (partition == "nanotron") return Framework::kNanotron;
  if (partition.rfind("deepspeed-", 0) == 0) return Framework::kDeepSpeed;
  return Framework::kMegatron;
}

std::int64_t Plan::vocab_multiple() const {
  if (vocab_divisible_by > 0) return vocab_divisible_by;
  switch (effective_framework()) {
    case Framework::kNanotron:
      return 1;
    case Framework::kColossalAI:
      return 64;
    case Framework::kMegatron:
    case Framework::kDeepSpeed:
      return 128;
  }
  return 128;
}

ScheduleConfig schedule_config(const Plan& plan) {
  ScheduleConfig c;
  switch (plan.schedule) {
    case ScheduleKind::kGPipe:
      c.schedule = PipelineSchedule::kGPipe;
      break;
    case ScheduleKind::k1F1B:
      c.schedule = PipelineSchedule::k1F1B;
      break;
    case ScheduleKind::kInterleaved:
      c.schedule = PipelineSchedule::kInterleaved;
      break;
    case ScheduleKind::kZBH1:
      c.schedule = PipelineSchedule::kZBH1;
      break;
  }
  c.stages = plan.pp;
  c.microbatches = plan.num_microbatches();
  c.chunks = plan.vp;
  c.group_size = plan.microbatch_group_size_per_vp_stage;
  return c;
}

std::string flag_of(const std::string& field) {
  std::string flag = "--";
  for (char c : field) flag += c == '_' ? '-' : c;
  return flag;
}

std::string PlanOrigin::name(const std::string& field) const {
  const std::string flag = flag_of(field);
  // A layout given to another flag ("--from pp") is not set by --pp; a scenario's value is.
  auto it = where.find(field);
  const bool other_flag = it != where.end() && it->second.starts_with("--") && it->second != flag;
  return other_flag ? field : flag;
}

std::string PlanOrigin::of(const std::string& field) const {
  auto it = where.find(field);
  if (it != where.end()) return it->second;
  return flag_of(field);
}

namespace {

void require_divides(const PlanOrigin& origin, const char* field, std::int64_t divisor,
                     const char* what, std::int64_t value) {
  if (value % divisor != 0) {
    fail_input(origin.of(field), "must divide " + std::string(what) + " (" + std::to_string(value) +
                                     "), got " + std::to_string(divisor));
  }
}

// Megatron-Core's and Transformer Engine's rules for context parallelism.
void validate_context_parallelism(const Plan& plan, const Model& model, const PlanOrigin& origin) {
  if (plan.cp == 1) return;
  // Causal load balance: the sequence in 2 x cp chunks, each rank the i-th and the mirrored one;
  // with sequence parallelism each chunk pair is split again over TP.
  const std::int64_t chunks = 2 * plan.cp * (plan.sp ? plan.tp : 1);
  if (plan.seq_len % chunks != 0) {
    fail_input(origin.of("seq_len"),
               "must be divisible by 2 x cp" + std::string(plan.sp ? " x tp" : "") + " = " +
                   std::to_string(chunks) + " with " + origin.name("cp") + " " +
                   std::to_string(plan.cp) +
                   " (the sequence is cut in 2 x cp chunks for causal load balance), got " +
                   std::to_string(plan.seq_len));
  }
  if (plan.attention_backend == AttentionBackend::kUnfused) {
    fail_input(origin.of("attention_backend"),
               "context parallelism runs in Transformer Engine's fused attention; use flash");
  }
  if (plan.cp_comm == CpComm::kP2P &&
      model.local_attention.kind == LocalAttention::Kind::kSliding) {
    fail_input(origin.of("cp_comm_type"),
               "Transformer Engine runs sliding-window attention under context parallelism only "
               "with a2a or allgather (got p2p)");
  }
  if (plan.cp_comm == CpComm::kA2A) {
    for (const auto& [what, heads] : {std::pair{"attention heads", model.num_attention_heads},
                                      std::pair{"KV heads", model.num_kv_heads}}) {
      if (heads % (plan.tp * plan.cp) != 0) {
        fail_input(origin.of("cp_comm_type"),
                   "a2a splits the heads over tp x cp = " + std::to_string(plan.tp * plan.cp) +
                       ", which must "
                       "divide the " +
                       what + " (" + std::to_string(heads) + "); use p2p or a smaller " +
                       origin.name("cp"));
      }
    }
  }
}

}  // namespace

Model trained_model(Model model, const Plan& plan) {
  if (plan.mtp_num_layers) {
    model.mtp_layers = *plan.mtp_num_layers;
  } else if (plan.effective_framework() != Framework::kMegatron) {
    model.mtp_layers = 0;
  }
  return model;
}

void validate_plan(const Plan& plan, const Model& model, const Platform& platform,
                   const PlanOrigin& origin) {
  if (plan.seq_len <= 0) fail_input(origin.of("seq_len"), "is required (a positive integer)");
  if (plan.recompute_modules != kRecomputeCoreAttn && plan.recompute != Recompute::kSelective) {
    fail_input(
        origin.of("recompute_modules"),
        "needs " + origin.name("recompute") + " selective (got " + to_string(plan.recompute) + ")");
  }
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
  // Bounds that keep every product below int64 and the task graph within a machine's memory.
  constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;
  constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 24;
  constexpr double kMaxReplayedPasses = 1e8;  // GPUs x micro-batches x chunks
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
  const double replayed = static_cast<double>(gpus) * static_cast<double>(plan.vp) *
                          static_cast<double>(plan.num_microbatches());
  if (replayed > kMaxReplayedPasses) {
    fail_input(
        origin.of("gbs"),
        "gives " + format_grouped(plan.num_microbatches()) + " micro-batches per step on " +
            format_grouped(gpus) + " GPUs" +
            (plan.vp > 1 ? " x " + std::to_string(plan.vp) + " chunks" : "") +
            ": more than the 100,000,000 passes per step trainsim can replay; use a larger " +
            origin.name("mbs") + " or a smaller " + origin.name("gbs"));
  }
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
  if (plan.overlap_p2p_comm && plan.schedule != ScheduleKind::kInterleaved) {
    fail_input(origin.of("overlap_p2p_comm"),
               "applies to the interleaved schedule only: gpipe and 1f1b wait for their exchanges "
               "on the compute stream (Megatron-LM turns the overlap off for them) and zb-h1 "
               "always posts them asynchronously");
  }
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
    fail_input(origin.of("gbs"), "must be at least mbs x dp (" + std::to_string(plan.mbs) + " x " +
                                     std::to_string(plan.dp) + " = " + std::to_string(per_step) +
                                     "), got " + std::to_string(plan.gbs));
  }
  if (plan.sp && plan.tp == 1) {
    fail_input(origin.of("sp"), "sequence parallelism needs " + origin.name("tp") + " 2 or more");
  }
  validate_context_parallelism(plan, model, origin);
  validate_expert_parallelism(plan, model, origin);
  validate_optimizer_instances(plan, origin);
  validate_wgrad_deferral(plan, model, origin);
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
  const bool uneven =
      plan.decoder_first_pipeline_num_layers >= 0 || plan.decoder_last_pipeline_num_layers >= 0 ||
      plan.account_for_embedding_in_pipeline_split || plan.account_for_loss_in_pipeline_split;
  if (uneven && plan.partition != "uniform") {
    const char* field =
        plan.decoder_first_pipeline_num_layers >= 0    ? "decoder_first_pipeline_num_layers"
        : plan.decoder_last_pipeline_num_layers >= 0   ? "decoder_last_pipeline_num_layers"
        : plan.account_for_embedding_in_pipeline_split ? "account_for_embedding_in_pipeline_split"
                                                       : "account_for_loss_in_pipeline_split";
    fail_input(origin.of(field), "is a Megatron-LM option of the uniform partition, not of \"" +
                                     plan.partition + "\"");
  }
}

}  // namespace trainsim
