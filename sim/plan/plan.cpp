#include "sim/plan/plan.hpp"

#include <string>

#include "sim/schedule/schedule.hpp"

namespace trainsim {

const char* to_string(Precision p) {
  return p == Precision::kBF16 ? "bf16" : "fp8";
}

const OptimizerStateKind& kind_of(OptimizerState s) {
  static constexpr OptimizerStateKind kKinds[] = {
      {"fp32", 4, 8, "adam"},                       // FP32 master and moments
      {"bf16-moments", 4, 4, "adam_bf16_moments"},  // FP32 master, BF16 moments
      {"bf16", 0, 4, "adam_bf16"},                  // BF16 moments, the weights stepped as they are
  };
  return kKinds[static_cast<std::size_t>(s)];
}

const char* to_string(OptimizerState s) {
  return kind_of(s).name;
}

const char* to_string(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kTensorwise:
      return "tensorwise";
    case Fp8Recipe::kBlockwise:
      return "blockwise";
    case Fp8Recipe::kMxfp8:
      return "mxfp8";
    case Fp8Recipe::kDelayed:
      break;
  }
  return "delayed";
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

const char* to_string(RecomputeMethod m) {
  return m == RecomputeMethod::kUniform ? "uniform" : "block";
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
    case Recompute::kOp:
      return "op";
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
    case CpComm::kA2AP2P:
      return "a2a+p2p";
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

Plan recomputing(Plan plan, Recompute r) {
  plan.recompute = r;
  if (r != Recompute::kSelective) plan.recompute_modules = kRecomputeCoreAttn;
  plan.recompute_num_layers = 0;
  plan.recompute_method = RecomputeMethod::kBlock;
  return plan;
}

Model trained_model(Model model, const Plan& plan) {
  if (plan.mtp_num_layers) {
    model.mtp_layers = *plan.mtp_num_layers;
  } else if (plan.effective_framework() != Framework::kMegatron) {
    model.mtp_layers = 0;
  }
  return model;
}

}  // namespace trainsim
