#pragma once
// Inputs of a simulation: a scenario file (model + platform + plan) and/or command-line flags;
// a flag overrides the scenario's value. Every value remembers where it came from so an error
// names the flag or the file and JSON path.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"
#include "sim/report/report.hpp"

namespace trainsim {

struct InputRequest {
  std::optional<std::string> scenario;            // path
  std::optional<std::string> model;               // name or path (flag)
  std::optional<std::string> platform;            // name or path (flag)
  std::map<std::string, std::string> plan_flags;  // plan field -> value as typed
  std::optional<std::string> engine;              // flag
  std::optional<std::string> kernel_db;           // --kernel-db: a database path, or "none"
  TrainingBudget budget;                          // --tokens, --price-per-gpu-hour
  /// --megatron-args: Megatron-LM launch arguments (their text) that set the plan, under the
  /// plan flags.
  std::optional<std::string> megatron_args;
  /// --megatron-args @FILE: the file, whose name names a model built from its arguments.
  std::optional<std::string> megatron_args_file;
  /// --nanotron-config: a nanotron training config (YAML) that sets the plan (and the model).
  std::optional<std::string> nanotron_config;
  /// --torchtitan-config: a torchtitan training config (TOML) that sets the plan (and names the
  /// model).
  std::optional<std::string> torchtitan_config;
  /// --measured-log: a training log of this very run, whose figures are compared with it.
  std::optional<std::string> measured_log;
};

struct ResolvedInputs {
  std::string scenario_name;
  std::filesystem::path scenario_path;  // empty without a scenario
  std::filesystem::path model_path;     // empty where no file holds the model
  /// What the model was built from where no file holds it: --megatron-args' text, or
  /// --nanotron-config's.
  std::string model_text;
  std::filesystem::path platform_path;
  Model model;
  Platform platform;
  Plan plan;
  PlanOrigin origin;
  EngineKind engine = EngineKind::kSimGrid;
  /// The scenario's "published" figures, with why they are not compared when flags changed the
  /// recipe they were measured on; and --measured-log's.
  PublishedComparison published;
  /// The run's length and price: the flags' over the scenario's "tokens" and
  /// "price_per_gpu_hour". They do not change a step, so the published figures stay compared.
  TrainingBudget budget;
  /// What the inputs said beside the plan, one line each for the standard error (how
  /// --megatron-args read: the flags it set, Megatron-LM's defaults, the arguments not read).
  std::vector<std::string> notes;
};

/// Loads the scenario, model and platform, applies flags and checks the plan's feasibility.
/// InputError on any bad input.
ResolvedInputs resolve_inputs(const InputRequest& request);

/// Applies flags (plan field -> value as typed) to `plan`, checked as run's flags are; InputError
/// naming the flag.
void apply_plan_flags(Plan& plan, const std::map<std::string, std::string>& flags);

/// A model or platform named in a scenario (or a sweep) file: a catalog name, or a path relative
/// to that file. InputError at `where` when there is no such entry.
std::filesystem::path resolve_from_scenario(const std::string& folder, const std::string& spec,
                                            const std::filesystem::path& scenario,
                                            const std::string& where);

}  // namespace trainsim
