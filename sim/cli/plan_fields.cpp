#include "sim/cli/plan_fields.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>

#include "sim/cli/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/lora_modules.hpp"
#include "sim/plan/recompute_modules.hpp"

namespace trainsim {

namespace {

Precision precision_of(const std::string& s) {
  return s == "fp8" ? Precision::kFP8 : Precision::kBF16;
}

ScheduleKind schedule_of(const std::string& s) {
  if (s == "gpipe") return ScheduleKind::kGPipe;
  if (s == "interleaved") return ScheduleKind::kInterleaved;
  if (s == "zb-h1") return ScheduleKind::kZBH1;
  return ScheduleKind::k1F1B;
}

Framework framework_of(const std::string& s) {
  if (s == "nanotron") return Framework::kNanotron;
  if (s == "deepspeed") return Framework::kDeepSpeed;
  if (s == "colossalai") return Framework::kColossalAI;
  return Framework::kMegatron;
}

Recompute recompute_of(const std::string& s) {
  if (s == "selective") return Recompute::kSelective;
  if (s == "full") return Recompute::kFull;
  return Recompute::kNone;
}

// A rank order, or the reason it is not one.
void check_rank_order(const std::string& where, const std::string& value) {
  if (!parse_rank_order(value)) {
    fail_input(where,
               "must name tp, cp, ep, dp and pp once each, innermost first, joined by '-' "
               "(Megatron-LM's default: tp-cp-ep-dp-pp), got '" +
                   value + "'");
  }
}

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

}  // namespace

namespace {

// The table's rows by kind of field; each setter writes one Plan member.
class FieldTable {
 public:
  using Set = std::function<void(Plan&, const std::string&)>;
  using Check = std::function<void(const std::string& where, const std::string& value)>;

  void integer(std::string name, IntRange range, std::int64_t Plan::*member) {
    add({std::move(name),
         FieldType::kInt,
         range,
         {},
         [member](Plan& p, std::int64_t v, const std::string&) { p.*member = v; }});
  }
  void flag(std::string name, bool Plan::*member) {
    add({std::move(name),
         FieldType::kBool,
         {},
         {},
         [member](Plan& p, std::int64_t v, const std::string&) { p.*member = v != 0; }});
  }
  void real(std::string name, double Plan::*member, RealRange range) {
    add({std::move(name), FieldType::kReal, {}, {}, {}, member, range});
  }
  // A choice among an enum's values, each named as to_string names it (reports write the
  // same name back).
  template <class E>
  void named(std::string name, std::initializer_list<E> values, E Plan::*member) {
    std::vector<std::string_view> names;
    for (const E v : values) names.push_back(to_string(v));
    choice(std::move(name), std::move(names),
           [values = std::vector<E>(values), member](Plan& p, const std::string& s) {
             for (const E v : values) {
               if (s == to_string(v)) p.*member = v;
             }
           });
  }
  void choice(std::string name, std::vector<std::string_view> options, Set set) {
    add({std::move(name),
         FieldType::kChoice,
         {},
         std::move(options),
         [set = std::move(set)](Plan& p, std::int64_t, const std::string& s) { set(p, s); }});
  }
  void text(std::string name, FieldType type, Set set, Check check = nullptr) {
    add({std::move(name),
         type,
         {},
         {},
         [set = std::move(set)](Plan& p, std::int64_t, const std::string& s) { set(p, s); },
         nullptr,
         {},
         std::move(check)});
  }
  void add(PlanField field) { fields.push_back(std::move(field)); }

  std::vector<PlanField> fields;
};

// Parallel sizes, MoE and the batch, in the order messages list them.
void layout_fields(FieldTable& t) {
  t.integer("tp", {}, &Plan::tp);
  t.integer("pp", {}, &Plan::pp);
  t.integer("dp", {}, &Plan::dp);
  t.integer("cp", {}, &Plan::cp);
  t.named("cp_comm_type", {CpComm::kP2P, CpComm::kA2A, CpComm::kAllGather, CpComm::kA2AP2P},
          &Plan::cp_comm);
  t.integer("cp_a2a_size", {0}, &Plan::cp_a2a_size);
  t.integer("ep", {}, &Plan::ep);
  t.integer("etp", {}, &Plan::etp);
  t.named("moe_token_dispatcher_type", {MoeDispatcher::kAllToAll, MoeDispatcher::kAllGather},
          &Plan::moe_dispatcher);
  // The defaults are in range: 1 (balanced) and 0 (dropless), as a report's plan writes them.
  t.real("moe_imbalance", &Plan::moe_imbalance, {1.0, true});
  t.real("moe_capacity_factor", &Plan::moe_capacity_factor, {0.0, true});
  t.flag("moe_grouped_gemm", &Plan::moe_grouped_gemm);
  t.add({"mtp_num_layers",
         FieldType::kInt,
         {0, Model::kMaxMtpLayers},
         {},
         [](Plan& p, std::int64_t v, const std::string&) { p.mtp_num_layers = v; }});
  t.integer("vp", {}, &Plan::vp);
  t.flag("sp", &Plan::sp);
  t.integer("mbs", {}, &Plan::mbs);
  t.integer("gbs", {}, &Plan::gbs);
  t.integer("seq_len", {}, &Plan::seq_len);
  t.integer("packed_document_tokens", {0}, &Plan::packed_document_tokens);
}

// Precision, schedule, partition, recomputation, attention, ZeRO and the framework's rules.
void execution_fields(FieldTable& t) {
  t.choice("precision", {"bf16", "fp8"},
           [](Plan& p, const std::string& s) { p.precision = precision_of(s); });
  t.named("fp8_recipe",
          {Fp8Recipe::kDelayed, Fp8Recipe::kTensorwise, Fp8Recipe::kBlockwise, Fp8Recipe::kMxfp8},
          &Plan::fp8_recipe);
  t.choice("schedule", {"gpipe", "1f1b", "interleaved", "zb-h1"},
           [](Plan& p, const std::string& s) { p.schedule = schedule_of(s); });
  t.text("partition", FieldType::kString, [](Plan& p, const std::string& s) { p.partition = s; });
  t.choice("recompute", {"none", "selective", "full"},
           [](Plan& p, const std::string& s) { p.recompute = recompute_of(s); });
  t.text(
      "recompute_modules", FieldType::kParsed,
      [](Plan& p, const std::string& s) { p.recompute_modules = *parse_recompute_modules(s); },
      check_recompute_modules);
  t.choice("attention_backend", {"flash", "unfused", "flash-attn2"},
           [](Plan& p, const std::string& s) {
             p.attention_backend = s == "unfused"       ? AttentionBackend::kUnfused
                                   : s == "flash-attn2" ? AttentionBackend::kFlashAttn2
                                                        : AttentionBackend::kFlash;
           });
  t.real("attention_dropout", &Plan::attention_dropout, {0.0, true, 1.0, false});
  t.real("hidden_dropout", &Plan::hidden_dropout, {0.0, true, 1.0, false});
  t.flag("cross_entropy_loss_fusion", &Plan::cross_entropy_loss_fusion);
  t.integer("lora_rank", {0, std::int64_t{1} << 16}, &Plan::lora_rank);
  t.text(
      "lora_target_modules", FieldType::kParsed,
      [](Plan& p, const std::string& s) { p.lora_target_modules = *parse_lora_modules(s); },
      check_lora_modules);
  t.integer("zero", {0, 3}, &Plan::zero);
  t.integer("num_distributed_optimizer_instances", {}, &Plan::num_distributed_optimizer_instances);
  // Bounded as reshard's layouts bound it: 2^62 overflowed the padding multiple (x tp) to a
  // division by zero.
  t.integer("vocab_divisible_by", {1, std::int64_t{1} << 20}, &Plan::vocab_divisible_by);
  t.integer("gpus", {}, &Plan::gpus);
  t.choice("framework", {"megatron", "nanotron", "deepspeed", "colossalai"},
           [](Plan& p, const std::string& s) { p.framework = framework_of(s); });
}

// Megatron-LM's pipeline-split options, the rank order and the overlap switches.
void pipeline_and_overlap_fields(FieldTable& t) {
  t.integer("decoder_first_pipeline_num_layers", {0}, &Plan::decoder_first_pipeline_num_layers);
  t.integer("decoder_last_pipeline_num_layers", {0}, &Plan::decoder_last_pipeline_num_layers);
  t.flag("account_for_embedding_in_pipeline_split", &Plan::account_for_embedding_in_pipeline_split);
  t.flag("account_for_loss_in_pipeline_split", &Plan::account_for_loss_in_pipeline_split);
  t.integer("microbatch_group_size_per_vp_stage", {1}, &Plan::microbatch_group_size_per_vp_stage);
  t.text(
      "rank_order", FieldType::kParsed,
      [](Plan& p, const std::string& s) { p.rank_order = *parse_rank_order(s); }, check_rank_order);
  t.flag("overlap_grad_reduce", &Plan::overlap_grad_reduce);
  t.flag("overlap_param_gather", &Plan::overlap_param_gather);
  t.flag("tp_comm_overlap", &Plan::tp_comm_overlap);
  t.flag("overlap_moe_expert_parallel_comm", &Plan::moe_a2a_overlap);
  t.flag("fp8_param_gather", &Plan::fp8_param_gather);
  t.flag("grad_reduce_in_bf16", &Plan::grad_reduce_in_bf16);
  t.named("optimizer_state",
          {OptimizerState::kFp32, OptimizerState::kBf16Moments, OptimizerState::kBf16},
          &Plan::optimizer_state);
  t.flag("defer_embedding_wgrad_compute", &Plan::defer_embedding_wgrad_compute);
  t.integer("wgrad_deferral_limit", {0}, &Plan::wgrad_deferral_limit);
  t.add({"overlap_p2p_comm",
         FieldType::kBool,
         {},
         {},
         [](Plan& p, std::int64_t v, const std::string&) { p.overlap_p2p_comm = v != 0; }});
}

}  // namespace

const std::vector<PlanField>& plan_fields() {
  static const std::vector<PlanField> fields = [] {
    FieldTable t;
    layout_fields(t);
    execution_fields(t);
    pipeline_and_overlap_fields(t);
    return std::move(t.fields);
  }();
  return fields;
}

namespace {

// An integer flag's value within its field's range, or the error naming the flag.
std::int64_t integer_value(const PlanField& field, const std::string& flag,
                           const std::string& value) {
  std::int64_t v = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, v);
  // Digits beyond 64 bits are an integer out of range, not a malformed one.
  const bool too_large = ec == std::errc::result_out_of_range && ptr == end;
  if ((ec != std::errc() && !too_large) || ptr != end) {
    fail_input(flag, "must be an integer, got '" + value + "'");
  }
  if (too_large || v < field.range.min || v > field.range.max) {
    std::string range = field.range.max == std::numeric_limits<std::int64_t>::max()
                            ? ">= " + std::to_string(field.range.min)
                            : "in [" + std::to_string(field.range.min) + ", " +
                                  std::to_string(field.range.max) + "]";
    const std::string beyond = !too_large               ? ""
                               : value.starts_with('-') ? " (less than -2^63)"
                                                        : " (more than 2^63 - 1)";
    fail_input(flag, "must be an integer " + range + ", got " + value + beyond);
  }
  return v;
}

// A choice flag's value, which must be one of the field's choices.
void check_choice(const PlanField& field, const std::string& flag, const std::string& value) {
  for (auto c : field.choices) {
    if (value == c) return;
  }
  std::string list;
  for (auto c : field.choices) list += (list.empty() ? "" : ", ") + std::string(c);
  fail_input(flag, "must be one of {" + list + "}, got '" + value + "'");
}

}  // namespace

void apply_flag(Plan& plan, const PlanField& field, const std::string& value) {
  const std::string flag = flag_of(field.name);
  switch (field.type) {
    case FieldType::kInt:
      field.set(plan, integer_value(field, flag, value), value);
      break;
    case FieldType::kBool:
      // A switch from the command line is "true" or "false"; so must a sweep's or --set's value be
      // ("yes" or 1 read as false would run another plan than the one written).
      if (value != "true" && value != "false") {
        fail_input(flag, "must be true or false, got '" + value + "'");
      }
      field.set(plan, value == "true" ? 1 : 0, value);
      break;
    case FieldType::kChoice:
      check_choice(field, flag, value);
      field.set(plan, 0, value);
      break;
    case FieldType::kString:
      if (value.empty()) fail_input(flag, "must not be empty");
      field.set(plan, 0, value);
      break;
    case FieldType::kParsed:
      field.check(flag, value);
      field.set(plan, 0, value);
      break;
    case FieldType::kReal: {
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v)) {
        fail_input(flag, "must be a number, got '" + value + "'");
      }
      if (!field.real_range.holds(v)) {
        fail_input(flag, "must be " + field.real_range.describe() + ", got " + value);
      }
      plan.*field.real = v;
      break;
    }
  }
}

void apply_json(Plan& plan, const PlanField& field, JsonObject& o) {
  switch (field.type) {
    case FieldType::kInt:
      field.set(plan, o.integer(field.name, field.range), "");
      break;
    case FieldType::kBool:
      field.set(plan, o.boolean(field.name) ? 1 : 0, "");
      break;
    case FieldType::kChoice:
      field.set(plan, 0, o.choice(field.name, field.choices));
      break;
    case FieldType::kString:
      field.set(plan, 0, o.string(field.name));
      break;
    case FieldType::kParsed: {
      const std::string value = o.string(field.name);
      field.check(o.where(field.name), value);
      field.set(plan, 0, value);
      break;
    }
    case FieldType::kReal:
      plan.*field.real = o.number(field.name, field.real_range);
      break;
  }
}

void apply_plan_flags(Plan& plan, const std::map<std::string, std::string>& flags) {
  for (const auto& field : plan_fields()) {
    auto it = flags.find(field.name);
    if (it != flags.end()) apply_flag(plan, field, it->second);
  }
}

const std::vector<std::string>& plan_field_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& f : plan_fields()) n.push_back(f.name);
    return n;
  }();
  return names;
}

}  // namespace trainsim
