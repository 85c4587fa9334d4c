#include "sim/plan/plan.hpp"

#include "sim/core/error.hpp"

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

std::string PlanOrigin::of(const std::string& field) const {
  auto it = where.find(field);
  if (it != where.end()) return it->second;
  std::string flag = "--";
  for (char c : field) flag += c == '_' ? '-' : c;
  return flag;
}

namespace {

std::string n(std::int64_t v) {
  return std::to_string(v);
}

void require_divides(const PlanOrigin& origin, const char* field, std::int64_t divisor,
                     const char* what, std::int64_t value) {
  if (value % divisor != 0) {
    fail_input(origin.of(field),
               "must divide " + std::string(what) + " (" + n(value) + "), got " + n(divisor));
  }
}

}  // namespace

void validate_plan(const Plan& plan, const Model& model, const Platform& platform,
                   const PlanOrigin& origin) {
  if (plan.seq_len <= 0) fail_input(origin.of("seq_len"), "is required (a positive integer)");
  if (plan.cp != 1) fail_input(origin.of("cp"), "context parallelism is not supported yet; use 1");
  if (plan.ep != 1) fail_input(origin.of("ep"), "expert parallelism is not supported yet; use 1");
  if (plan.vp != 1 || plan.schedule == ScheduleKind::kInterleaved) {
    fail_input(origin.of(plan.vp != 1 ? "vp" : "schedule"),
               "the interleaved schedule (virtual stages) is not supported yet; use gpipe or 1f1b");
  }
  if (plan.schedule == ScheduleKind::kZBH1) {
    fail_input(origin.of("schedule"), "zb-h1 is not supported yet; use gpipe or 1f1b");
  }
  if (plan.sp) fail_input(origin.of("sp"), "sequence parallelism is not supported yet");
  if (plan.recompute != Recompute::kNone) {
    fail_input(origin.of("recompute"), "activation recomputation is not supported yet; use none");
  }
  if (plan.zero != 0) fail_input(origin.of("zero"), "ZeRO sharding is not supported yet; use 0");
  if (plan.partition != "uniform") {
    fail_input(origin.of("partition"),
               "only the uniform partition is supported yet, got \"" + plan.partition + "\"");
  }
  if (plan.precision == Precision::kFP8 && platform.gpu.peak_fp8_flops <= 0) {
    fail_input(origin.of("precision"), "fp8 needs FP8 tensor cores; " + platform.gpu.name +
                                           " has none (platform " + platform.name + ")");
  }

  require_divides(origin, "tp", plan.tp, "the attention heads", model.num_attention_heads);
  require_divides(origin, "tp", plan.tp, "the KV heads", model.num_kv_heads);
  require_divides(origin, "tp", plan.tp, "the FFN hidden size",
                  model.moe.is_moe() ? model.moe.expert_ffn_hidden_size : model.ffn_hidden_size);
  if (plan.pp > model.num_layers) {
    fail_input(origin.of("pp"), "exceeds the number of layers (" + n(model.num_layers) + ")");
  }
  if (plan.partition == "uniform" && model.num_layers % plan.pp != 0) {
    fail_input(origin.of("pp"), "must divide the number of layers (" + n(model.num_layers) +
                                    ") for the uniform partition, got " + n(plan.pp));
  }
  const std::int64_t per_step = plan.mbs * plan.dp;
  if (plan.gbs > 0 && plan.gbs % per_step != 0) {
    fail_input(origin.of("gbs"), "must be a multiple of mbs x dp (" + n(plan.mbs) + " x " +
                                     n(plan.dp) + " = " + n(per_step) + "), got " + n(plan.gbs));
  }
  if (plan.gpus > 0 && plan.gpus != plan.world_size()) {
    fail_input(origin.of("gpus"), "is " + n(plan.gpus) + " but tp x pp x dp = " + n(plan.tp) +
                                      " x " + n(plan.pp) + " x " + n(plan.dp) + " = " +
                                      n(plan.world_size()));
  }
  if (model.position_embedding == PositionEmbedding::kLearned &&
      plan.seq_len > model.max_position_embeddings) {
    fail_input(origin.of("seq_len"),
               "exceeds the model's learned positions (" + n(model.max_position_embeddings) + ")");
  }
  if (plan.vocab_divisible_by <= 0) {
    fail_input(origin.of("vocab_divisible_by"), "must be a positive integer");
  }
}

}  // namespace trainsim
