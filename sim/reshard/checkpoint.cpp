#include "sim/reshard/checkpoint.hpp"

#include <algorithm>
#include <map>
#include <set>

// GCC 12 reports a false "may be used uninitialized" inside libstdc++'s <regex> at -O1 with the
// sanitizers (as in sim/plan/partition.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <regex>
#pragma GCC diagnostic pop

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim {

namespace {

constexpr std::int64_t kMaxFiles = 1'000'000;

std::string relative_name(const std::filesystem::path& p, const std::filesystem::path& dir) {
  return std::filesystem::relative(p, dir).generic_string();
}

bool pickled(const std::filesystem::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".pkl" || ext == ".metadata" ||
         ext == ".distcp";
}

// nanotron's per-tensor files: <module path>/model_<name>_pp-rank-P-of-N_tp-rank-T-of-M.safetensors
// holding one tensor "data". The tensor's name is the module path plus <name>.
void name_nanotron_shard(SafetensorsHeader& h, const std::string& rel) {
  static const std::regex file_re(
      R"((.*)/model_([A-Za-z0-9_]+?)_pp-rank-\d+-of-\d+_tp-rank-(\d+)-of-(\d+)\.safetensors)");
  std::smatch m;
  if (!std::regex_match(rel, m, file_re)) return;
  std::string module = m[1].str();
  if (module.rfind("model/", 0) == 0) module = module.substr(6);
  for (char& c : module) c = c == '/' ? '.' : c;
  for (auto& t : h.tensors) {
    if (t.name != "data") continue;
    t.name = module + "." + m[2].str();
    t.tp_rank = std::stoll(m[3].str());
    t.tp_size = std::stoll(m[4].str());
  }
}

void read_index(const std::filesystem::path& dir, CheckpointListing& out) {
  const auto index_path = dir / "model.safetensors.index.json";
  const std::string where = index_path.filename().string();
  auto j = load_json_file(index_path);
  JsonObject o(j, where);
  o.allow({"metadata"});
  const nlohmann::json& map = o.raw("weight_map");
  o.finish();
  if (!map.is_object()) fail_input(where + ": $.weight_map", "must be an object of file names");
  std::map<std::string, std::set<std::string>> files;  // file -> tensors it must hold
  for (const auto& [name, file] : map.items()) {
    if (!file.is_string()) fail_input(where + ": $.weight_map." + name, "must be a file name");
    const std::filesystem::path f = file.get<std::string>();
    if (f.empty() || f.is_absolute() || f.lexically_normal().string().rfind("..", 0) == 0) {
      fail_input(where + ": $.weight_map." + name,
                 "must name a file inside the checkpoint directory, got " + file.dump());
    }
    files[f.lexically_normal().generic_string()].insert(name);
  }
  for (const auto& [file, names] : files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(dir / file, ec)) {
      fail_input(where + ": $.weight_map." + *names.begin(),
                 "names " + file + ", which is not in the checkpoint directory");
    }
    SafetensorsHeader h = read_safetensors_header(dir / file, file);
    std::set<std::string> found;
    for (auto& t : h.tensors) {
      found.insert(t.name);
      if (names.count(t.name)) out.tensors.push_back(std::move(t));
    }
    for (const auto& name : names) {
      if (!found.count(name)) {
        fail_input(where + ": $.weight_map." + name,
                   "names " + file + ", which has no such tensor");
      }
    }
    out.bytes += h.file_bytes;
    ++out.files;
  }
  out.format = "safetensors with a Hugging Face index (model.safetensors.index.json)";
}

void scan(const std::filesystem::path& dir, CheckpointListing& out) {
  bool nanotron = false;
  std::error_code ec;
  std::vector<std::filesystem::path> paths;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    if (static_cast<std::int64_t>(paths.size()) >= kMaxFiles) {
      fail_input(dir.string(),
                 "holds more than 1,000,000 files; point --checkpoint at one "
                 "checkpoint (one iteration's directory)");
    }
    paths.push_back(it->path());
  }
  if (ec) fail_input(dir.string(), "cannot list: " + ec.message());
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    const std::string rel = relative_name(p, dir);
    if (p.extension() == ".safetensors") {
      SafetensorsHeader h = read_safetensors_header(p, rel);
      name_nanotron_shard(h, rel);
      nanotron = nanotron || (!h.tensors.empty() && h.tensors.front().tp_size > 0);
      for (auto& t : h.tensors) out.tensors.push_back(std::move(t));
      out.bytes += h.file_bytes;
      ++out.files;
    } else if (pickled(p)) {
      ++out.pickled_files;
      out.bytes += static_cast<std::int64_t>(std::filesystem::file_size(p, ec));
    } else if (p.filename() == "metadata.json" && out.format.empty()) {
      // Megatron-LM's distributed checkpoint names its backend in plain JSON; the shapes are in
      // the pickled .metadata beside it.
      auto j = load_json_file(p);
      if (j.is_object() && j.contains("sharded_backend") && j["sharded_backend"].is_string()) {
        out.format =
            "Megatron-LM distributed checkpoint (" + j["sharded_backend"].get<std::string>() + ")";
      }
    }
  }
  if (out.files > 0) {
    out.format = nanotron ? "safetensors, one file per tensor shard (nanotron)" : "safetensors";
  } else if (out.format.empty() && out.pickled_files > 0) {
    out.format = "pickled files (.pt/.bin)";
  }
}

}  // namespace

CheckpointListing read_checkpoint(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir, ec)) {
    fail_input("--checkpoint", dir.string() + " is a file; give the checkpoint's directory");
  }
  if (!std::filesystem::is_directory(dir, ec))
    fail_input("--checkpoint", "no such directory: " + dir.string());
  CheckpointListing out;
  out.directory = dir.string();
  if (std::filesystem::is_regular_file(dir / "model.safetensors.index.json", ec)) {
    read_index(dir, out);
  } else {
    scan(dir, out);
  }
  if (out.format.empty()) out.format = "no checkpoint files found";
  return out;
}

}  // namespace trainsim
