#include "sim/cli/scenario.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/check/wording.hpp"
#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/platform/kernel_db.hpp"

namespace trainsim {

namespace {

// kParsed: a string with a syntax of its own, checked by the field's `check`.
enum class FieldType { kInt, kBool, kChoice, kString, kParsed, kReal };

struct PlanField {
  std::string name;
  FieldType type;
  IntRange range;
  std::vector<std::string_view> choices;
  std::function<void(Plan&, std::int64_t, const std::string&)> set;
  double Plan::*real = nullptr;  // kReal: the member set, within real_range
  RealRange real_range = {};
  std::function<void(const std::string& where, const std::string& value)> check = nullptr;
};

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

const std::vector<PlanField>& plan_fields() {
  static const std::vector<PlanField> fields = [] {
    std::vector<PlanField> f;
    auto integer = [&f](std::string name, IntRange range, std::int64_t Plan::*member) {
      f.push_back({std::move(name),
                   FieldType::kInt,
                   range,
                   {},
                   [member](Plan& p, std::int64_t v, const std::string&) { p.*member = v; }});
    };
    integer("tp", {}, &Plan::tp);
    integer("pp", {}, &Plan::pp);
    integer("dp", {}, &Plan::dp);
    integer("cp", {}, &Plan::cp);
    f.push_back({"cp_comm_type",
                 FieldType::kChoice,
                 {},
                 {"p2p", "a2a", "allgather"},
                 [](Plan& p, std::int64_t, const std::string& s) {
                   p.cp_comm = s == "a2a"         ? CpComm::kA2A
                               : s == "allgather" ? CpComm::kAllGather
                                                  : CpComm::kP2P;
                 }});
    integer("ep", {}, &Plan::ep);
    integer("etp", {}, &Plan::etp);
    f.push_back({"moe_token_dispatcher_type",
                 FieldType::kChoice,
                 {},
                 {"alltoall", "allgather"},
                 [](Plan& p, std::int64_t, const std::string& s) {
                   p.moe_dispatcher =
                       s == "allgather" ? MoeDispatcher::kAllGather : MoeDispatcher::kAllToAll;
                 }});
    f.push_back({"moe_imbalance", FieldType::kReal, {}, {}, {}, &Plan::moe_imbalance, {1.0}});
    f.push_back(
        {"moe_capacity_factor", FieldType::kReal, {}, {}, {}, &Plan::moe_capacity_factor, {0.0}});
    f.push_back({"mtp_num_layers",
                 FieldType::kInt,
                 {0, Model::kMaxMtpLayers},
                 {},
                 [](Plan& p, std::int64_t v, const std::string&) { p.mtp_num_layers = v; }});
    integer("vp", {}, &Plan::vp);
    f.push_back({"sp", FieldType::kBool, {}, {}, [](Plan& p, std::int64_t v, const std::string&) {
                   p.sp = v != 0;
                 }});
    integer("mbs", {}, &Plan::mbs);
    integer("gbs", {}, &Plan::gbs);
    integer("seq_len", {}, &Plan::seq_len);
    f.push_back(
        {"precision",
         FieldType::kChoice,
         {},
         {"bf16", "fp8"},
         [](Plan& p, std::int64_t, const std::string& s) { p.precision = precision_of(s); }});
    f.push_back({"schedule",
                 FieldType::kChoice,
                 {},
                 {"gpipe", "1f1b", "interleaved", "zb-h1"},
                 [](Plan& p, std::int64_t, const std::string& s) { p.schedule = schedule_of(s); }});
    f.push_back(
        {"partition", FieldType::kString, {}, {}, [](Plan& p, std::int64_t, const std::string& s) {
           p.partition = s;
         }});
    f.push_back(
        {"recompute",
         FieldType::kChoice,
         {},
         {"none", "selective", "full"},
         [](Plan& p, std::int64_t, const std::string& s) { p.recompute = recompute_of(s); }});
    f.push_back({"recompute_modules",
                 FieldType::kParsed,
                 {},
                 {},
                 [](Plan& p, std::int64_t, const std::string& s) {
                   p.recompute_modules = *parse_recompute_modules(s);
                 },
                 nullptr,
                 {},
                 check_recompute_modules});
    f.push_back({"attention_backend",
                 FieldType::kChoice,
                 {},
                 {"flash", "unfused", "flash-attn2"},
                 [](Plan& p, std::int64_t, const std::string& s) {
                   p.attention_backend = s == "unfused"       ? AttentionBackend::kUnfused
                                         : s == "flash-attn2" ? AttentionBackend::kFlashAttn2
                                                              : AttentionBackend::kFlash;
                 }});
    integer("zero", {0, 3}, &Plan::zero);
    // Bounded as reshard's layouts bound it: 2^62 overflowed the padding multiple (x tp) to a
    // division by zero.
    integer("vocab_divisible_by", {1, std::int64_t{1} << 20}, &Plan::vocab_divisible_by);
    integer("gpus", {}, &Plan::gpus);
    f.push_back(
        {"framework",
         FieldType::kChoice,
         {},
         {"megatron", "nanotron", "deepspeed", "colossalai"},
         [](Plan& p, std::int64_t, const std::string& s) { p.framework = framework_of(s); }});
    integer("decoder_first_pipeline_num_layers", {0}, &Plan::decoder_first_pipeline_num_layers);
    integer("decoder_last_pipeline_num_layers", {0}, &Plan::decoder_last_pipeline_num_layers);
    f.push_back({"account_for_embedding_in_pipeline_split",
                 FieldType::kBool,
                 {},
                 {},
                 [](Plan& p, std::int64_t v, const std::string&) {
                   p.account_for_embedding_in_pipeline_split = v != 0;
                 }});
    f.push_back({"account_for_loss_in_pipeline_split",
                 FieldType::kBool,
                 {},
                 {},
                 [](Plan& p, std::int64_t v, const std::string&) {
                   p.account_for_loss_in_pipeline_split = v != 0;
                 }});
    integer("microbatch_group_size_per_vp_stage", {1}, &Plan::microbatch_group_size_per_vp_stage);
    f.push_back(
        {"rank_order",
         FieldType::kParsed,
         {},
         {},
         [](Plan& p, std::int64_t, const std::string& s) { p.rank_order = *parse_rank_order(s); },
         nullptr,
         {},
         check_rank_order});
    const auto flag = [&f](std::string name, bool Plan::*member) {
      f.push_back({std::move(name),
                   FieldType::kBool,
                   {},
                   {},
                   [member](Plan& p, std::int64_t v, const std::string&) { p.*member = v != 0; }});
    };
    flag("overlap_grad_reduce", &Plan::overlap_grad_reduce);
    flag("overlap_param_gather", &Plan::overlap_param_gather);
    flag("tp_comm_overlap", &Plan::tp_comm_overlap);
    flag("overlap_moe_expert_parallel_comm", &Plan::moe_a2a_overlap);
    flag("fp8_param_gather", &Plan::fp8_param_gather);
    f.push_back({"overlap_p2p_comm",
                 FieldType::kBool,
                 {},
                 {},
                 [](Plan& p, std::int64_t v, const std::string&) { p.overlap_p2p_comm = v != 0; }});
    return f;
  }();
  return fields;
}

void apply_flag(Plan& plan, const PlanField& field, const std::string& value) {
  const std::string flag = flag_of(field.name);
  switch (field.type) {
    case FieldType::kInt: {
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
      field.set(plan, v, value);
      break;
    }
    case FieldType::kBool:
      // A switch from the command line is "true" or "false"; so must a sweep's or --set's value be
      // ("yes" or 1 read as false would run another plan than the one written).
      if (value != "true" && value != "false") {
        fail_input(flag, "must be true or false, got '" + value + "'");
      }
      field.set(plan, value == "true" ? 1 : 0, value);
      break;
    case FieldType::kChoice: {
      for (auto c : field.choices) {
        if (value == c) {
          field.set(plan, 0, value);
          return;
        }
      }
      std::string list;
      for (auto c : field.choices) list += (list.empty() ? "" : ", ") + std::string(c);
      fail_input(flag, "must be one of {" + list + "}, got '" + value + "'");
    }
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
      if (v < field.real_range.min || v > field.real_range.max) {
        fail_input(flag,
                   "must be at least " + format_number(field.real_range.min) + ", got " + value);
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

EngineKind engine_of(const std::string& s) {
  return s == "analytic" ? EngineKind::kAnalytic : EngineKind::kSimGrid;
}

}  // namespace

std::filesystem::path resolve_from_scenario(const std::string& folder, const std::string& spec,
                                            const std::filesystem::path& scenario,
                                            const std::string& where) {
  if (spec.find('/') != std::string::npos || spec.ends_with(".json")) {
    auto p = std::filesystem::path(spec);
    if (p.is_relative()) p = scenario.parent_path() / p;
    return resolve_catalog_entry(folder, p.string(), where);
  }
  return resolve_catalog_entry(folder, spec, where);
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

namespace {

// --kernel-db: another kernel-timing database than the platform's, or none (the roofline alone).
void use_kernel_database(Platform& platform, const std::string& db) {
  if (db == "none") {
    platform.kernel_db.reset();
    platform.kernel_db_name.clear();
    platform.kernel_db_path.clear();
    return;
  }
  std::error_code ec;
  if (db.empty()) fail_input("--kernel-db", "must not be empty (a file, or none)");
  if (std::filesystem::is_directory(db, ec)) {
    fail_input("--kernel-db", db + " is a directory, not a JSON file");
  }
  if (!std::filesystem::is_regular_file(db, ec)) fail_input("--kernel-db", "no such file: " + db);
  platform.kernel_db = std::make_shared<const KernelDatabase>(load_kernel_database(db));
  platform.kernel_db_name = db;
  platform.kernel_db_path = db;
}

// A scenario's "published" array: step times measured on its recipe, each with its source.
std::vector<PublishedStepTime> read_published(JsonObject& scenario) {
  std::vector<PublishedStepTime> out;
  if (!scenario.has("published")) return out;
  const auto& array = scenario.raw("published");
  if (!array.is_array() || array.empty()) {
    scenario.fail("published",
                  "must be a non-empty array of {\"step_time_s\": seconds, \"source\": \"who "
                  "measured it, where\"}, got " +
                      json_type_name(array));
  }
  for (std::size_t i = 0; i < array.size(); ++i) {
    JsonObject figure(array[i], scenario.file(),
                      scenario.path() + ".published[" + std::to_string(i) + "]");
    PublishedStepTime f;
    f.step_time_s = figure.number("step_time_s");
    f.source = figure.string("source");
    if (f.source.empty()) figure.fail("source", "must name who measured it and where");
    figure.finish();
    out.push_back(std::move(f));
  }
  return out;
}

// Why a scenario's published figures do not apply to this run, or "": the flags that change
// the model, the platform or the plan it was measured with.
std::string changed_recipe(const InputRequest& req) {
  std::vector<std::string> flags;
  if (req.model) flags.push_back("--model");
  if (req.platform) flags.push_back("--platform");
  for (const auto& [field, value] : req.plan_flags) flags.push_back(flag_of(field));
  if (flags.empty()) return "";
  return and_list(flags) + (flags.size() == 1 ? " changes" : " change") +
         " the recipe the published step time was measured on";
}

}  // namespace

ResolvedInputs resolve_inputs(const InputRequest& req) {
  ResolvedInputs in;
  std::optional<std::filesystem::path> model_path;
  std::optional<std::filesystem::path> platform_path;
  if (req.scenario) {
    in.scenario_path = resolve_catalog_entry("scenarios", *req.scenario, "SCENARIO");
    const std::string file = in.scenario_path.string();
    auto j = load_json_file(in.scenario_path);
    JsonObject o(j, file);
    in.scenario_name = o.optional_string("name").value_or(in.scenario_path.stem().string());
    o.allow({"description", "notes"});
    in.published.figures = read_published(o);
    if (!in.published.figures.empty()) in.published.not_compared = changed_recipe(req);
    if (!req.model) {
      model_path =
          resolve_from_scenario("models", o.string("model"), in.scenario_path, o.where("model"));
    } else {
      o.allow({"model"});
    }
    if (!req.platform) {
      platform_path = resolve_from_scenario("platforms", o.string("platform"), in.scenario_path,
                                            o.where("platform"));
    } else {
      o.allow({"platform"});
    }
    if (auto engine = o.optional_choice("engine", {"simgrid", "analytic"})) {
      in.engine = engine_of(*engine);
    }
    auto plan = o.object("plan");
    for (const auto& field : plan_fields()) {
      // A flag overrides the scenario's value, which is then not read at all.
      if (!plan.has(field.name) || req.plan_flags.count(field.name) > 0) {
        plan.allow({field.name});
        continue;
      }
      apply_json(in.plan, field, plan);
      in.origin.where[field.name] = plan.where(field.name);
    }
    plan.finish();
    o.finish();
  }
  if (req.model) model_path = resolve_catalog_entry("models", *req.model, "--model");
  if (req.platform) platform_path = resolve_catalog_entry("platforms", *req.platform, "--platform");
  if (!model_path)
    fail_input("--model",
               "is required (a catalog name or a config.json path), or give a SCENARIO.json");
  if (!platform_path)
    fail_input("--platform", "is required (a catalog name or a path), or give a SCENARIO.json");
  for (const auto& field : plan_fields()) {
    auto it = req.plan_flags.find(field.name);
    if (it == req.plan_flags.end()) continue;
    apply_flag(in.plan, field, it->second);
    in.origin.where[field.name] = flag_of(field.name);
  }
  if (req.engine) in.engine = engine_of(*req.engine);
  in.model_path = *model_path;
  in.platform_path = *platform_path;
  in.model = trained_model(load_model(in.model_path), in.plan);
  in.platform = load_platform(in.platform_path);
  if (req.kernel_db) use_kernel_database(in.platform, *req.kernel_db);
  validate_plan(in.plan, in.model, in.platform, in.origin);
  return in;
}

}  // namespace trainsim
