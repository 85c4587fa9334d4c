#include "sim/cli/scenario_writer.hpp"

#include <filesystem>

#include "sim/core/catalog.hpp"
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

}  // namespace

nlohmann::ordered_json plan_as_set(const ResolvedInputs& in) {
  nlohmann::ordered_json plan = nlohmann::ordered_json::object();
  for (const PlanField& f : plan_fields()) {
    if (!f.report || !in.origin.where.contains(f.name)) continue;
    if (auto value = f.report(in.plan); !value.is_null()) plan[f.name] = std::move(value);
  }
  return plan;
}

nlohmann::ordered_json scenario_of(const ResolvedInputs& in, const std::string& name,
                                   const std::string& written_from) {
  nlohmann::ordered_json s;
  s["name"] = name;
  s["description"] = "The inputs of `" + written_from + "`.";
  s["model"] = spec_of(in.model_path, "models");
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
  return s;
}

}  // namespace trainsim
