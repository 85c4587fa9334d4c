#include "sim/cli/scenario.hpp"

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/check/wording.hpp"
#include "sim/cli/budget_flags.hpp"
#include "sim/cli/launch_configs.hpp"
#include "sim/cli/plan_fields.hpp"
#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/core/files.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/units.hpp"
#include "sim/platform/gpu_match.hpp"
#include "sim/platform/kernel_db.hpp"
#include "sim/validate/training_log.hpp"

namespace trainsim {

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

namespace {

EngineKind engine_of(const std::string& s) {
  return s == "analytic" ? EngineKind::kAnalytic : EngineKind::kSimGrid;
}

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
  platform.kernel_db = shared_kernel_database(db);
  if (auto mismatch = kernel_db_gpu_mismatch(platform.gpu, *platform.kernel_db)) {
    fail_input("--kernel-db", db + " " + *mismatch);
  }
  platform.kernel_db_name = db;
  platform.kernel_db_path = db;
}

// What a "published" figure may hold, for messages.
constexpr const char* kFigureForm =
    "{\"step_time_s\": seconds or \"tokens_per_s_per_gpu\": throughput, and/or "
    "\"max_allocated_gib\": torch.cuda.max_memory_allocated of the GPU that allocated most, "
    "\"source\": \"who measured it, where\"}";

// One "published" figure: a step time (or tokens/s per GPU), a peak allocation, or both.
PublishedFigure read_figure(JsonObject& figure) {
  PublishedFigure f;
  f.step_time_s = figure.optional_number("step_time_s").value_or(0);
  f.tokens_per_s_per_gpu = figure.optional_number("tokens_per_s_per_gpu").value_or(0);
  f.max_allocated_bytes = figure.optional_number("max_allocated_gib").value_or(0) * kGiB;
  if (f.step_time_s > 0 && f.tokens_per_s_per_gpu > 0) {
    figure.fail("tokens_per_s_per_gpu",
                "gives the throughput a second time: give step_time_s or tokens_per_s_per_gpu");
  }
  if (!f.gives_step() && !f.gives_memory()) {
    figure.fail("", std::string("measures nothing: expected ") + kFigureForm);
  }
  f.source = figure.string("source");
  if (f.source.empty()) figure.fail("source", "must name who measured it and where");
  figure.finish();
  return f;
}

// A scenario's "published" array: figures measured on its recipe, each with its source.
std::vector<PublishedFigure> read_published(JsonObject& scenario) {
  std::vector<PublishedFigure> out;
  scenario.allow({"published"});  // a key of every scenario, named among the known ones
  if (!scenario.has("published")) return out;
  const auto& array = scenario.raw("published");
  if (!array.is_array() || array.empty()) {
    scenario.fail("published", std::string("must be a non-empty array of ") + kFigureForm +
                                   ", got " + json_type_name(array));
  }
  for (std::size_t i = 0; i < array.size(); ++i) {
    JsonObject figure(array[i], scenario.file(),
                      scenario.path() + ".published[" + std::to_string(i) + "]");
    out.push_back(read_figure(figure));
  }
  return out;
}

// The step the plan's tokens take at a throughput of tokens/s per GPU.
double step_at(const Plan& plan, double tokens_per_s_per_gpu) {
  return static_cast<double>(plan.tokens_per_step()) /
         (static_cast<double>(plan.world_size()) * tokens_per_s_per_gpu);
}

// Figures given as tokens/s per GPU, as the step time of the plan they were measured on; kept
// unconverted when plan flags change that plan (they are not compared then).
void convert_throughputs(const InputRequest& req, ResolvedInputs& in) {
  if (!req.plan_flags.empty()) return;
  for (auto& f : in.published.figures) {
    if (f.tokens_per_s_per_gpu > 0) f.step_time_s = step_at(in.plan, f.tokens_per_s_per_gpu);
  }
}

// --measured-log: what a training log of this very run measured, compared with it. A scenario's
// own figures stay where flags leave its recipe as it is.
void add_measured_log(const InputRequest& req, ResolvedInputs& in) {
  if (!req.measured_log) return;
  const std::string& file = *req.measured_log;
  const TrainingLog log = read_training_log(read_text_file(file), file);
  if (!in.published.not_compared.empty()) in.published.figures.clear();
  in.published.not_compared.clear();
  PublishedFigure f;
  if (log.gives_throughput()) {
    // Tokens/s per GPU (torchtitan's), compared as the step the plan's tokens take at that rate.
    f.tokens_per_s_per_gpu = log.throughput_per_gpu();
    f.step_time_s = step_at(in.plan, f.tokens_per_s_per_gpu);
  } else if (log.has_step()) {
    f.step_time_s = log.step_time_s();
  }
  f.max_allocated_bytes = log.max_allocated_mib * kMiB;
  f.source = log.source(file);
  in.published.figures.push_back(std::move(f));
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

// The scenario file: its name, published figures, engine, plan (fields a flag overrides are not
// read), and the model and platform it names unless a flag does.
void read_scenario(const InputRequest& req, ResolvedInputs& in,
                   std::optional<std::filesystem::path>& model_path,
                   std::optional<std::filesystem::path>& platform_path) {
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
  in.budget = read_budget(o);
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

// The plan flags, over the scenario's values; each field's origin is its flag.
void apply_plan_flags(const InputRequest& req, ResolvedInputs& in) {
  for (const auto& field : plan_fields()) {
    auto it = req.plan_flags.find(field.name);
    if (it == req.plan_flags.end()) continue;
    apply_flag(in.plan, field, it->second);
    // A switch that turns a field off is the field's flag with "no-" (--no-overlap-p2p-comm).
    const bool off = field.type == FieldType::kBool && it->second == "false";
    in.origin.where[field.name] =
        off ? "--no-" + flag_of(field.name).substr(2) : flag_of(field.name);
  }
}

// Without dp, a given GPU count's data parallelism is the GPUs tp x cp x pp leave over, as a
// sweep's plans have it; messages about dp then name the GPU count that set it.
void derive_dp(ResolvedInputs& in) {
  Plan& p = in.plan;
  if (p.gpus <= 0 || in.origin.where.contains("dp")) return;
  const std::int64_t model_parallel = p.model_parallel_size();
  if (p.gpus % model_parallel != 0) {
    fail_input(in.origin.of("gpus"),
               "must be a multiple of tp x cp x pp = " + std::to_string(model_parallel) +
                   " (without dp, dp is the GPUs they leave over), got " + std::to_string(p.gpus));
  }
  p.dp = p.gpus / model_parallel;
  in.origin.where["dp"] = in.origin.of("gpus");
}

}  // namespace

ResolvedInputs resolve_inputs(const InputRequest& req) {
  ResolvedInputs in;
  std::optional<std::filesystem::path> model_path;
  std::optional<std::filesystem::path> platform_path;
  if (req.scenario) read_scenario(req, in, model_path, platform_path);
  if (req.model) model_path = resolve_catalog_entry("models", *req.model, "--model");
  if (req.platform) platform_path = resolve_catalog_entry("platforms", *req.platform, "--platform");
  if (!model_path && !req.megatron_args && !req.nanotron_config && !req.torchtitan_config)
    fail_input("--model",
               "is required (a catalog name or a config.json path), or give a SCENARIO.json, "
               "a Megatron-LM launch (--megatron-args) whose shape arguments build it, a "
               "nanotron config (--nanotron-config) or a torchtitan config "
               "(--torchtitan-config)");
  // Flags alone: the platform the catalog's scenarios and sweeps mostly run on, named in the
  // report. A scenario file names its own.
  if (!platform_path)
    platform_path = resolve_catalog_entry("platforms", kDefaultPlatform, "--platform");
  const Model model = req.megatron_args       ? apply_megatron_args(req, model_path, in)
                      : req.nanotron_config   ? apply_nanotron_config(req, model_path, in)
                      : req.torchtitan_config ? apply_torchtitan_config(req, model_path, in)
                                              : load_model(*model_path);
  apply_plan_flags(req, in);
  derive_dp(in);
  convert_throughputs(req, in);
  add_measured_log(req, in);
  if (req.engine) in.engine = engine_of(*req.engine);
  in.budget = over(req.budget, in.budget);
  if (model_path) in.model_path = *model_path;
  in.platform_path = *platform_path;
  in.model = trained_model(model, in.plan);
  in.platform = load_platform(in.platform_path);
  if (req.kernel_db) use_kernel_database(in.platform, *req.kernel_db);
  validate_plan(in.plan, in.model, in.platform, in.origin);
  return in;
}

}  // namespace trainsim
