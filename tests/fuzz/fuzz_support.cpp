#include "tests/fuzz/fuzz_support.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/plan_schema.hpp"

namespace trainsim::fuzz {

namespace fs = std::filesystem;

namespace {

const fs::path kSource = TRAINSIM_SOURCE_DIR;

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    // The target cannot run without its scratch files: stop rather than report false findings.
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

// A platform file of the catalog with its kernel database replaced by the published one.
void write_light_platform(const fs::path& from, const fs::path& to) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(std::ifstream(from));
  if (j.contains("kernel_database")) j["kernel_database"] = "kernels-published.json";
  write_file(to, j.dump(2));
}

fs::path make_light_catalog() {
  const fs::path dir = scratch_dir() / "catalog";
  fs::create_directories(dir / "platforms");
  fs::create_directories(dir / "scenarios" / "seeds");
  fs::create_directory_symlink(kSource / "models", dir / "models");
  fs::create_directory_symlink(kSource / "scenarios" / "seeds" / "models",
                               dir / "scenarios" / "seeds" / "models");
  fs::copy_file(kSource / "platforms" / "h100-sxm" / "kernels-published.json",
                dir / "platforms" / "kernels-published.json");
  for (const auto& entry : fs::directory_iterator(kSource / "platforms")) {
    if (entry.path().extension() != ".json") continue;
    write_light_platform(entry.path(), dir / "platforms" / entry.path().filename());
  }
  ::setenv("TRAINSIM_DATA_DIR", dir.c_str(), 1);
  return dir;
}

constexpr std::string_view kScratchPrefix = "trainsim-fuzz-";

// libFuzzer leaves by _Exit on a crash, a hang or a leak, when no cleanup runs: each process
// removes instead the scratch directories of the processes that are gone.
void remove_stale_scratch(const fs::path& tmp) {
  std::vector<fs::path> stale;
  std::error_code ec;
  for (auto it = fs::directory_iterator(tmp, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(kScratchPrefix)) continue;
    std::error_code gone;
    if (!fs::exists("/proc/" + name.substr(kScratchPrefix.size()), gone)) {
      stale.push_back(it->path());
    }
  }
  for (const auto& d : stale) fs::remove_all(d, ec);
}

}  // namespace

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    const fs::path tmp = fs::temp_directory_path();
    remove_stale_scratch(tmp);
    fs::path d = tmp / (std::string(kScratchPrefix) + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

fs::path write_scratch(const std::string& name, std::string_view bytes) {
  const fs::path path = scratch_dir() / name;
  write_file(path, bytes);
  return path;
}

const fs::path& light_catalog() {
  static const fs::path dir = make_light_catalog();
  return dir;
}

namespace {

// The repository's entry `name` (a bare name, never a path) in the first of `folders` that has
// it, read once; failures are not kept, so the cache holds at most the repository's files.
template <class Entry, class Load>
const Entry& cached(std::initializer_list<const char*> folders, const std::string& name,
                    Load load) {
  static std::map<std::string, std::unique_ptr<Entry>> entries;
  if (auto it = entries.find(name); it != entries.end()) return *it->second;
  if (name.empty() || name.find('/') != std::string::npos) {
    fail_input("catalog", "not a catalog name: '" + name + "'");
  }
  for (const char* folder : folders) {
    const fs::path path = kSource / folder / (name + ".json");
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    auto entry = std::make_unique<Entry>(load(path));
    return *entries.emplace(name, std::move(entry)).first->second;
  }
  fail_input("catalog", "no entry '" + name + "'");
}

}  // namespace

const Model& catalog_model(const std::string& name) {
  return cached<Model>({"models", "scenarios/seeds/models", "tests/data/models"}, name,
                       [](const fs::path& p) { return load_model(p); });
}

const Platform& catalog_platform(const std::string& name) {
  return cached<Platform>({"platforms"}, name, [](const fs::path& p) { return load_platform(p); });
}

void warm_catalog() {
  for (const char* folder :
       {"models", "scenarios/seeds/models", "tests/data/models", "platforms"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(kSource / folder, ec)) {
      if (e.path().extension() != ".json") continue;
      const std::string name = e.path().stem().string();
      try {
        if (std::string_view(folder) == "platforms") {
          (void)catalog_platform(name);
        } else {
          (void)catalog_model(name);
        }
      } catch (const InputError&) {
        // A test model that is bad on purpose: inputs naming it meet the same error.
      }
    }
  }
}

void check_plan_of_fields(const std::map<std::string, std::string>& fields,
                          const std::map<std::string, std::string>& origins, const Model& model) {
  Plan plan;
  PlanOrigin origin;
  for (const auto& field : plan_fields()) {
    const auto it = fields.find(field.name);
    if (it == fields.end()) continue;
    set_from_text(plan, field, origins.at(field.name), it->second);
    origin.where[field.name] = origins.at(field.name);
  }
  if (!fields.contains("dp") && plan.gpus > 0 && plan.gpus % plan.model_parallel_size() == 0) {
    plan.dp = plan.gpus / plan.model_parallel_size();
  }
  validate_plan(plan, trained_model(model, plan), catalog_platform("h100-sxm-ndr"), origin);
}

}  // namespace trainsim::fuzz
