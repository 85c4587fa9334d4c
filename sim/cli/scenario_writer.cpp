#include "sim/cli/scenario_writer.hpp"

#include <filesystem>

#include "sim/core/catalog.hpp"
#include "sim/core/units.hpp"
#include "sim/plan/plan_schema.hpp"

namespace trainsim {

namespace {

// A catalog entry's name where `path` is one (models/NAME.json under the data directory), else
// the absolute path, which a scenario anywhere can read.
std::string spec_of(const std::filesystem::path& path, const char* folder) {
  std::error_code ec;
  const auto entry = data_dir() / folder / (path.stem().string() + ".json");
  if (path.extension() == ".json" && std::filesystem::equivalent(path, entry, ec)) {
    return path.stem().string();
  }
  return std::filesystem::absolute(path, ec).lexically_normal().string();
}

// The figures measured on this very run (a scenario's, where flags leave its recipe as it is;
// --measured-log's), as its "published" array gives them.
nlohmann::ordered_json published_of(const PublishedComparison& published) {
  nlohmann::ordered_json figures = nlohmann::ordered_json::array();
  for (const PublishedFigure& f : published.figures) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    if (f.tokens_per_s_per_gpu > 0) {
      j["tokens_per_s_per_gpu"] = f.tokens_per_s_per_gpu;
    } else if (f.step_time_s > 0) {
      j["step_time_s"] = f.step_time_s;
    }
    if (f.gives_memory()) j["max_allocated_gib"] = f.max_allocated_bytes / kGiB;
    j["source"] = f.source;
    figures.push_back(std::move(j));
  }
  return figures;
}

}  // namespace

nlohmann::ordered_json plan_as_set(const ResolvedInputs& in) {
  nlohmann::ordered_json plan = nlohmann::ordered_json::object();
  for (const PlanField& f : plan_fields()) {
    if (!f.report || !in.origin.where.contains(f.name)) continue;
    if (auto value = f.report(in.plan); !value.is_null()) plan[f.name] = std::move(value);
  }
  return plan;
}

std::string model_file_beside(const std::string& scenario) {
  std::filesystem::path p(scenario);
  return p.replace_filename(p.stem().string() + ".model.json").string();
}

nlohmann::ordered_json scenario_of(const ResolvedInputs& in, const std::string& written_from,
                                   const std::string& path) {
  nlohmann::ordered_json s;
  s["name"] = path == "-" ? "scenario" : std::filesystem::path(path).stem().string();
  s["description"] = "The inputs of `" + written_from + "`.";
  // A model file beside the scenario is named relative to it, as a scenario reads it.
  s["model"] = in.model_path.empty()
                   ? std::filesystem::path(model_file_beside(path)).filename().string()
                   : spec_of(in.model_path, "models");
  s["platform"] = spec_of(in.platform_path, "platforms");
  s["plan"] = plan_as_set(in);
  const auto& b = in.budget;
  for (const auto& [key, value] : {std::pair{"tokens", b.tokens},
                                   {"price_per_gpu_hour", b.price_per_gpu_hour},
                                   {"gpu_mtbf_hours", b.gpu_mtbf_hours},
                                   {"checkpoint_s", b.checkpoint_s},
                                   {"restart_s", b.restart_s}}) {
    if (value) s[key] = *value;
  }
  if (!in.published.figures.empty() && in.published.not_compared.empty()) {
    s["published"] = published_of(in.published);
  }
  return s;
}

}  // namespace trainsim
