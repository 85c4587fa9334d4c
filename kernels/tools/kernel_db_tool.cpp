// Questions about a kernel-timing database that need the simulator's own lookup:
//   trainsim_kernel_db interpolation DB.json [--offgrid MEASURED.json]...
// prints, as JSON, the interpolation error of held-back grid points (every seventh of each
// family left out in turn) and of measurements the database does not hold, by kernel class:
// {"held_back": {"gemm": {"count", "mean", "median", "p90", "max"}, ...}, "offgrid": {...}}.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/host/interpolation.hpp"
#include "kernels/host/stats.hpp"
#include "sim/core/error.hpp"

namespace {

const char* const kUsage =
    "usage: trainsim_kernel_db interpolation DB.json [--offgrid MEASURED.json]...\n";

nlohmann::ordered_json stats_json(const trainsim::kernels::ErrorsByClass& errors) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [cls, e] : errors) {
    const auto s = trainsim::kernels::summarize(e);
    out[cls] = {
        {"count", s.count}, {"mean", s.mean}, {"median", s.median}, {"p90", s.p90}, {"max", s.max}};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainsim;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < 2 || args[0] != "interpolation") {
    std::cerr << kUsage;
    return 2;
  }
  try {
    const KernelDatabase db = load_kernel_database(args[1]);
    std::vector<KernelDbEntry> measured;
    for (std::size_t i = 2; i < args.size(); ++i) {
      if (args[i] != "--offgrid" || i + 1 >= args.size()) {
        std::cerr << kUsage;
        return 2;
      }
      for (auto& e : load_kernel_database(args[++i]).entries()) measured.push_back(std::move(e));
    }
    nlohmann::ordered_json out;
    out["held_back"] =
        stats_json(kernels::held_back_errors(db, kernels::grid_labels(kernels::SuiteOptions{})));
    out["offgrid"] = stats_json(kernels::offgrid_errors(db, measured));
    std::cout << out.dump(1) << "\n";
  } catch (const InputError& e) {
    std::cerr << "trainsim_kernel_db: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
