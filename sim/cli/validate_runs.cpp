#include "sim/cli/validate_runs.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include "sim/cli/scenario.hpp"
#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/core/progress.hpp"
#include "sim/reshard/layout_spec.hpp"
#include "sim/validate/measured_runs.hpp"

namespace trainsim {

namespace {

namespace fs = std::filesystem;

// A scenario of the catalog (or one of its shelves) named `name`.
bool catalog_scenario(const std::string& name) {
  return catalog_entry("scenarios", name).has_value();
}

// A folder of scenarios rather than a catalog name: a path, or a name the catalog lacks.
bool scenario_folder(const std::string& spec) {
  std::error_code ec;
  if (!fs::is_directory(spec, ec)) return false;
  return spec.find('/') != std::string::npos || !catalog_scenario(spec);
}

// Whether a JSON file is a scenario: an object with a "plan".
bool is_scenario(const fs::path& file) {
  const auto j = load_json_file(file);
  return j.is_object() && j.contains("plan");
}

// The scenario files a folder holds (its *.json, not its subfolders), sorted; any other JSON file
// there (a model, a note) is left out, and `skipped` names it.
std::vector<fs::path> folder_scenarios(const std::string& folder,
                                       std::vector<std::string>& skipped) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.path().extension() != ".json" || !entry.is_regular_file(ec)) continue;
    if (is_scenario(entry.path())) {
      files.push_back(entry.path());
    } else {
      skipped.push_back(entry.path().string());
    }
  }
  if (ec) fail_input(folder, "cannot be read: " + ec.message());
  if (files.empty()) fail_input(folder, "holds no scenario file (*.json) to validate against");
  std::sort(files.begin(), files.end());
  std::sort(skipped.begin(), skipped.end());
  return files;
}

// The run in a few words: its model, layout, batch and precision.
std::string setup_of(const ResolvedInputs& in) {
  const Plan& p = in.plan;
  return in.model.name + ", " + layout_text(p) + ", mbs " + std::to_string(p.mbs) + ", gbs " +
         std::to_string(p.global_batch()) + ", seq " + std::to_string(p.seq_len) + ", " +
         to_string(p.precision);
}

struct PlatformRuns {
  Platform platform;
  std::vector<MeasuredRun> runs;
};

// One scenario as a measured run, added to its platform's runs. `named`: the user named it,
// so a scenario without measured step times is an input error rather than a skipped row.
void add_scenario(const fs::path& file, bool named, const std::optional<std::string>& platform,
                  std::vector<std::pair<std::string, PlatformRuns>>& groups) {
  InputRequest request;
  request.scenario = file.string();
  request.platform = platform;
  ResolvedInputs in = resolve_inputs(request);
  MeasuredRun run;
  run.name = in.scenario_name;
  run.setup = setup_of(in);
  run.model = in.model;
  run.plan = in.plan;
  run.engine = in.engine;
  for (const auto& figure : in.published.figures) {
    if (figure.step_time_s > 0) run.steps.push_back({figure.step_time_s, figure.source});
    if (figure.gives_memory()) run.peaks.push_back({figure.max_allocated_bytes, figure.source});
  }
  if (run.steps.empty() && run.peaks.empty()) {
    const std::string why =
        "no \"published\" figure (an array of {\"step_time_s\": seconds or "
        "\"tokens_per_s_per_gpu\": throughput, and/or \"max_allocated_gib\": peak, "
        "\"source\": \"who measured it, where\"})";
    if (named) fail_input(in.scenario_path.string() + ": $.published", "is missing: " + why);
    run.skipped = why;
  }
  const std::string key = platform ? *platform : in.platform_path.string();
  auto it =
      std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
  if (it == groups.end()) it = groups.insert(groups.end(), {key, {std::move(in.platform), {}}});
  it->second.runs.push_back(std::move(run));
}

}  // namespace

bool names_scenarios(const std::string& spec) {
  std::error_code ec;
  if (!fs::is_regular_file(spec, ec)) return scenario_folder(spec) || catalog_scenario(spec);
  if (is_reference_set(spec)) return false;
  if (is_scenario(spec)) return true;
  fail_input(spec, "neither " + known_reference_sets() +
                       " nor a scenario file (an object with \"model\", \"platform\", \"plan\" and "
                       "the \"published\" step times measured on it)");
}

std::vector<ValidationSet> validate_scenarios(const std::vector<std::string>& specs,
                                              const std::optional<std::string>& platform,
                                              std::int64_t jobs) {
  std::vector<std::pair<std::string, PlatformRuns>> groups;
  std::vector<std::string> not_scenarios;  // other JSON files in the folders
  ProgressLine progress;
  for (const auto& spec : specs) {
    const bool folder = scenario_folder(spec);
    const std::vector<fs::path> files =
        folder ? folder_scenarios(spec, not_scenarios)
               : std::vector<fs::path>{resolve_catalog_entry("scenarios", spec, spec)};
    for (const auto& file : files) {
      progress.phase("reading " + file.string());
      add_scenario(file, !folder, platform, groups);
    }
  }
  std::vector<ValidationSet> sets;
  const std::string reference = "measured runs in " + join(specs, ", ");
  for (const auto& [key, group] : groups) {
    progress.phase("simulating the measured runs on " + group.platform.name);
    for (auto& set : validate_measured_runs(reference, group.runs, group.platform, jobs)) {
      sets.push_back(std::move(set));
    }
  }
  // Listed with the first set's skipped rows, so that a file left out is seen.
  for (const auto& file : not_scenarios) {
    ValidationRow row;
    row.name = file;
    row.skipped = "not a scenario file (an object with a \"plan\"): left out";
    sets.front().rows.push_back(std::move(row));
  }
  return sets;
}

}  // namespace trainsim
