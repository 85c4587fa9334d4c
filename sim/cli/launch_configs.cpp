#include "sim/cli/launch_configs.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "sim/cli/plan_fields.hpp"
#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/core/files.hpp"
#include "sim/core/format.hpp"
#include "sim/core/toml_subset.hpp"
#include "sim/core/yaml_subset.hpp"
#include "sim/plan/megatron_args.hpp"
#include "sim/plan/nanotron_config.hpp"
#include "sim/plan/torchtitan_config.hpp"

namespace trainsim {

namespace {

// A plan field's value as its flag writes it on a shell's command line: "--tp 8", "--sp",
// "--no-moe-grouped-gemm", "--partition 'Et|(tt|)*30mL'"; "" for a switch at its default, which
// no flag writes (--moe-grouped-gemm is trainsim's default).
std::string as_flag(const PlanField& field, const std::string& value) {
  if (field.type == FieldType::kBool) {
    return value == (field.negated ? "false" : "true") ? switch_flag(field) : "";
  }
  const bool plain = value.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789._,:+=/-") == std::string::npos;
  return flag_of(field.name) + " " + (plain ? value : "'" + value + "'");
}

// The fields a launch's arguments or config set, under the plan flags, each at its origin; notes
// saying how they were read, as trainsim flags ("read as:") and the framework's defaults.
void set_read_fields(const std::string& where, const std::map<std::string, std::string>& fields,
                     const std::map<std::string, std::string>& origins,
                     const std::vector<std::string>& defaults_applied, const std::string& framework,
                     const InputRequest& req, ResolvedInputs& in) {
  std::string set;
  std::string defaults;
  for (const auto& field : plan_fields()) {
    const auto it = fields.find(field.name);
    if (it == fields.end() || req.plan_flags.contains(field.name)) continue;
    const std::string& origin = origins.at(field.name);
    set_from_text(in.plan, field, origin, it->second);
    in.origin.where[field.name] = origin;
    const bool by_default = std::find(defaults_applied.begin(), defaults_applied.end(),
                                      field.name + " " + it->second) != defaults_applied.end();
    if (const std::string flag = as_flag(field, it->second); !flag.empty()) {
      (by_default ? defaults : set) += " " + flag;
    }
  }
  in.notes.push_back(where + " read as:" + (set.empty() ? " nothing" : set));
  if (!defaults.empty()) in.notes.push_back(where + ": " + framework + "'s defaults:" + defaults);
}

// The --save-scenario model and the report's record of a model no file holds: the text it was
// built from.
Model built_model(Model model, const std::string& text, const std::string& where,
                  const std::string& what, ResolvedInputs& in) {
  in.model_text = text;
  in.notes.push_back(where + ": the model " + what + " (no --model given)");
  return model;
}

}  // namespace

// --megatron-args: the fields Megatron-LM's arguments set, each named by its argument, under the
// plan flags; notes saying how they were read.
// Without a model file, the model is the one Megatron-LM builds from the shape arguments, named
// by the launch script's file.
Model apply_megatron_args(const InputRequest& req,
                          const std::optional<std::filesystem::path>& model_path,
                          ResolvedInputs& in) {
  const std::string where = "--megatron-args";
  if (req.scenario) {
    fail_input(where, "sets the whole plan: give --model M (and --gpus N) instead of a scenario");
  }
  const LaunchCommand launch = parse_launch_command(*req.megatron_args, where);
  Model model;
  if (model_path) {
    model = load_model(*model_path);
  } else {
    const std::string name = req.megatron_args_file
                                 ? std::filesystem::path(*req.megatron_args_file).stem().string()
                                 : "megatron-args";
    model = built_model(model_from_megatron_args(launch, name, where), *req.megatron_args, where,
                        "built from its shape arguments", in);
  }
  const MegatronPlan m = plan_from_megatron_args(launch, model, where);
  // Megatron-LM's data parallelism is what the world size leaves: it must be known.
  if (!m.fields.contains("gpus") && !req.plan_flags.contains("gpus") &&
      !req.plan_flags.contains("dp")) {
    fail_input(where,
               "gives no GPU count (Megatron-LM's data parallelism is what the world "
               "size leaves; torchrun's --nproc-per-node and --nnodes give it): add --gpus N");
  }
  if (!m.fields.contains("seq_len") && !req.plan_flags.contains("seq_len")) {
    fail_input(where,
               "has no --seq-length, which Megatron-LM's GPT training needs: add it, or give "
               "--seq-len N");
  }
  set_read_fields(where, m.fields, m.origin, m.defaults, "Megatron-LM", req, in);
  if (!m.unread.empty()) {
    in.notes.push_back(where +
                       ": not read (the model gives them, or they set nothing trainsim prices): " +
                       join(m.unread, ", "));
  }
  return model;
}

Model apply_nanotron_config(const InputRequest& req,
                            const std::optional<std::filesystem::path>& model_path,
                            ResolvedInputs& in) {
  const std::string where = "--nanotron-config";
  if (req.scenario) {
    fail_input(where,
               "sets the whole plan: give it without a scenario (and --model M to price "
               "another model than its model_config)");
  }
  const std::string& file = *req.nanotron_config;
  const std::string text = read_text_file(file);
  const nlohmann::json config = parse_yaml_subset(text, file);
  const Model model =
      model_path ? load_model(*model_path)
                 : built_model(model_from_nanotron_config(
                                   config, std::filesystem::path(file).stem().string(), file),
                               text, where, "of its model_config", in);
  const NanotronPlan p = plan_from_nanotron_config(config, file);
  set_read_fields(where, p.fields, p.origin, {}, "nanotron", req, in);
  for (const auto& note : p.notes) in.notes.push_back(where + ": " + note);
  return model;
}

Model apply_torchtitan_config(const InputRequest& req,
                              std::optional<std::filesystem::path>& model_path,
                              ResolvedInputs& in) {
  const std::string where = "--torchtitan-config";
  if (req.scenario) {
    fail_input(where,
               "sets the whole plan: give it without a scenario (and --model M to price "
               "another model than its [model] flavor)");
  }
  const std::string& file = *req.torchtitan_config;
  const nlohmann::json config = parse_toml_subset(read_text_file(file), file);
  if (!model_path) {
    model_path = resolve_catalog_entry("models", torchtitan_catalog_model(config, file), file);
  }
  const Model model = load_model(*model_path);
  const TorchtitanPlan p = plan_from_torchtitan_config(config, file, model, req.plan_flags);
  set_read_fields(where, p.fields, p.origin, p.defaults, "torchtitan", req, in);
  for (const auto& note : p.notes) in.notes.push_back(where + ": " + note);
  return model;
}

}  // namespace trainsim
