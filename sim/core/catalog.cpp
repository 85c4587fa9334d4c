#include "sim/core/catalog.hpp"

#include <algorithm>
#include <cstdlib>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/suggest.hpp"
#include "sim/core/version.hpp"

namespace trainsim {

std::string_view version() {
  return TRAINSIM_VERSION;
}

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("TRAINSIM_DATA_DIR"); env != nullptr && *env != '\0') {
    std::error_code ec;  // an empty catalog would read as "no such model"
    if (!std::filesystem::is_directory(env, ec)) {
      fail_input("TRAINSIM_DATA_DIR", std::string("no such directory: ") + env);
    }
    return env;
  }
  return TRAINSIM_DEFAULT_DATA_DIR;
}

std::vector<std::string> catalog_names(std::string_view folder) {
  std::vector<std::string> names;
  std::error_code ec;
  auto dir = data_dir() / folder;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".json") {
      names.push_back(it->path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> catalog_shelves(std::string_view folder) {
  if (folder == "scenarios") return {"scenarios/seeds", "scenarios/teaching"};
  return {};
}

std::optional<std::filesystem::path> catalog_entry(std::string_view folder, std::string_view name) {
  std::vector<std::string> shelves = {std::string(folder)};
  for (auto& shelf : catalog_shelves(folder)) shelves.push_back(std::move(shelf));
  std::error_code ec;
  for (const auto& shelf : shelves) {
    auto entry = data_dir() / shelf / (std::string(name) + ".json");
    if (std::filesystem::is_regular_file(entry, ec)) return entry;
  }
  return std::nullopt;
}

std::filesystem::path resolve_catalog_entry(std::string_view folder, std::string_view spec,
                                            std::string_view where) {
  if (spec.empty()) fail_input(where, "must not be empty");
  std::error_code ec;
  std::filesystem::path as_path(spec);
  if (std::filesystem::is_regular_file(as_path, ec)) return as_path;
  // A bare name is a catalog entry even where the working directory holds a folder so named
  // (results/ has one per scenario): only a path, or a name the catalog lacks, is that folder.
  const bool is_directory = std::filesystem::is_directory(as_path, ec);
  // A folder is no entry, but a model's Hugging Face snapshot folder holds its config.json.
  const auto in_directory = [&] {
    if (folder == "models" && std::filesystem::is_regular_file(as_path / "config.json", ec)) {
      return as_path / "config.json";
    }
    fail_input(where, std::string(spec) + " is a directory, not a JSON file" +
                          (folder == "models" ? " (nor a folder holding a config.json)" : ""));
  };
  bool looks_like_path = spec.find('/') != std::string_view::npos ||
                         (spec.size() > 5 && spec.substr(spec.size() - 5) == ".json");
  if (looks_like_path && is_directory) return in_directory();
  if (looks_like_path) fail_input(where, "no such file: " + std::string(spec));
  if (auto entry = catalog_entry(folder, spec)) return *entry;
  if (is_directory) return in_directory();
  std::vector<std::string> names = catalog_names(folder);
  for (const auto& shelf : catalog_shelves(folder)) {
    for (auto& n : catalog_names(shelf)) names.push_back(std::move(n));
  }
  fail_input(where, "unknown " + std::string(folder) + " entry \"" + std::string(spec) + "\"" +
                        did_you_mean(spec, names) +
                        " (known: " + (names.empty() ? "none found" : join(names, ", ")) +
                        "; or give a path to a .json file)");
}

}  // namespace trainsim
