#include "sim/cli/list_command.hpp"

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <utility>
#include <vector>

#include "sim/cli/scenario.hpp"
#include "sim/cli/sweep_spec.hpp"
#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/model/params.hpp"
#include "sim/reshard/layout_spec.hpp"

namespace trainsim {

namespace {

// "  name" padded to `width`.
std::string name_column(const std::string& name, std::size_t width) {
  return "  " + pad_right(name, width);
}

// The width of a column of names: the longest and two spaces, and no less than 16.
std::size_t widest(const std::vector<const std::vector<std::string>*>& lists) {
  std::size_t width = 16;
  for (const auto* names : lists) {
    for (const auto& name : *names) width = std::max(width, name.size() + 2);
  }
  return width;
}

std::string model_line(const Model& m) {
  std::string s = format_grouped(total_params(m)) + " parameters, " + std::to_string(m.num_layers) +
                  " layers, hidden " + std::to_string(m.hidden_size) + ", " +
                  std::to_string(m.num_attention_heads) + "/" + std::to_string(m.num_kv_heads) +
                  " heads/KV heads, vocabulary " + std::to_string(m.vocab_size);
  if (m.moe.is_moe()) {
    s += "; " + std::to_string(m.moe.num_experts) + " experts, top " +
         std::to_string(m.moe.experts_per_token) + ", " + format_grouped(active_params(m)) +
         " active";
  }
  if (m.mtp_layers > 0) {
    s += "; " + std::to_string(m.mtp_layers) + " multi-token-prediction module" +
         (m.mtp_layers == 1 ? "" : "s") + ", " +
         format_grouped(m.mtp_layers * mtp_module_params(m)) + " parameters more";
  }
  return s;
}

std::string model_entry(const std::string& name) {
  return model_line(load_model(resolve_catalog_entry("models", name, "models/" + name)));
}

std::string platform_entry(const std::string& name) {
  const Platform p = load_platform(resolve_catalog_entry("platforms", name, "platforms/" + name));
  return p.gpu.name + ", " + std::to_string(p.node.gpus_per_node) + " per node";
}

// An entry's line, or why it cannot be read or run: one bad file in a data folder of one's own
// does not stop the listing.
template <typename Describe>
std::string described(const Describe& describe, const char* failure) {
  try {
    return describe();
  } catch (const InputError& e) {
    return failure + std::string(e.what());
  }
}

// What a scenario runs: "llama3.1-8b on h100-sxm-ndr, 8 GPUs: tp 1, pp 1, cp 2, dp 4", and
// how many measured figures it holds ("; 2 published step times", "; 1 published peak":
// trainsim validate NAME).
std::string scenario_line(const std::string& folder, const std::string& name) {
  InputRequest request;
  request.scenario = (data_dir() / folder / (name + ".json")).string();
  const ResolvedInputs in = resolve_inputs(request);
  std::string line = in.model.name + " on " + in.platform.name + ", " +
                     format_grouped(in.plan.world_size()) +
                     (in.plan.world_size() == 1 ? " GPU: " : " GPUs: ") + layout_text(in.plan);
  const auto counted = [](std::int64_t n, const std::string& what) {
    return std::to_string(n) + " published " + what + (n == 1 ? "" : "s");
  };
  if (const auto n = in.published.step_figures(); n > 0) line += "; " + counted(n, "step time");
  if (const auto n = in.published.memory_figures(); n > 0) line += "; " + counted(n, "peak");
  return line;
}

// The scenarios, then each shelf's, their names in one column as wide as the longest.
void list_scenarios(std::ostream& out) {
  std::vector<std::string> folders = {"scenarios"};
  for (auto& shelf : catalog_shelves("scenarios")) folders.push_back(std::move(shelf));
  std::vector<std::vector<std::string>> names;
  for (const auto& folder : folders) names.push_back(catalog_names(folder));
  std::vector<const std::vector<std::string>*> lists;
  for (const auto& n : names) lists.push_back(&n);
  const std::size_t width = widest(lists);
  for (std::size_t f = 0; f < folders.size(); ++f) {
    out << (f == 0 ? std::string("scenarios:") : folders[f] + "/ (run or check them by name too):")
        << "\n";
    for (const auto& name : names[f]) {
      out << name_column(name, width)
          << described([&] { return scenario_line(folders[f], name); }, "cannot be run: ") << "\n";
    }
  }
}

// What a sweep file sweeps: "llama3.1-70b on h100-sxm-ndr, 1,024 to 8,192 GPUs: 64 plans".
std::string sweep_line(const std::string& name) {
  const SweepSpec spec = load_sweep_spec(data_dir() / kSweepsFolder / (name + ".json"));
  const auto [fewest, most] = std::minmax_element(spec.gpus.begin(), spec.gpus.end());
  std::string gpus = format_grouped(*fewest);
  if (*most != *fewest) gpus += " to " + format_grouped(*most);
  const std::int64_t plans = sweep_size(spec);
  return spec.model.stem().string() + " on " + platform_names(spec) + ", " + gpus +
         (*most == 1 ? " GPU: " : " GPUs: ") + format_grouped(plans) +
         (plans == 1 ? " plan" : " plans");
}

void list_sweeps(std::ostream& out) {
  const std::vector<std::string> names = catalog_names(kSweepsFolder);
  if (names.empty()) return;
  const std::size_t width = widest({&names});
  out << kSweepsFolder << "/ (sweep them by name: trainsim sweep NAME --out FILE.csv):\n";
  for (const auto& name : names) {
    out << name_column(name, width)
        << described([&] { return sweep_line(name); }, "cannot be swept: ") << "\n";
  }
}

// The launch files under scenarios/launch/, each with the flag that reads it.
void list_launches(std::ostream& out) {
  const std::filesystem::path folder = data_dir() / "scenarios" / "launch";
  std::vector<std::pair<std::string, std::string>> files;  // name, how to read it
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string path = "scenarios/launch/" + name;
    if (entry.path().extension() == ".sh") files.emplace_back(name, "--megatron-args @" + path);
    if (entry.path().extension() == ".yaml") files.emplace_back(name, "--nanotron-config " + path);
    if (entry.path().extension() == ".toml") {
      files.emplace_back(name, "--torchtitan-config " + path);
    }
  }
  if (files.empty()) return;
  std::sort(files.begin(), files.end());
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.first);
  const std::size_t width = widest({&names});
  out << "scenarios/launch/ (launches to run or check, paths under the data folder):\n";
  for (const auto& [name, how] : files) out << name_column(name, width) << how << "\n";
}

}  // namespace

int list_command(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    out << "usage: trainsim list\n\nPrints the catalog: the models under models/ with their "
           "parameter counts, the\nplatforms under platforms/, the scenarios under scenarios/ "
           "with the model,\nplatform, GPUs and layout each runs, and the sweep files under\n"
           "scenarios/sweeps/ with the model, platform, GPU counts and plans each sweeps,\n"
           "and the launch files under scenarios/launch/ with the flag that reads each\n"
           "(TRAINSIM_DATA_DIR to use another data folder).\n";
    return 0;
  }
  if (!args.empty()) fail_input("trainsim list", "takes no arguments (see trainsim list --help)");
  const std::vector<std::string> models = catalog_names("models");
  const std::vector<std::string> platforms = catalog_names("platforms");
  const std::size_t width = widest({&models, &platforms});
  out << "models:\n";
  for (const auto& name : models) {
    out << name_column(name, width)
        << described([&] { return model_entry(name); }, "cannot be read: ") << "\n";
  }
  out << "platforms:\n";
  for (const auto& name : platforms) {
    out << name_column(name, width)
        << described([&] { return platform_entry(name); }, "cannot be read: ") << "\n";
  }
  list_scenarios(out);
  list_sweeps(out);
  list_launches(out);
  return 0;
}

}  // namespace trainsim
