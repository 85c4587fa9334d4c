#include "kernels/host/suite_run.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/platform/kernel_db.hpp"

namespace trainsim::kernels {

std::vector<KernelShape> selected_shapes(const SuiteRun& run, const std::vector<KernelShape>& all) {
  auto shapes = filter_ops(all, run.ops);
  if (run.accumulating_only || run.accumulating_twins) {
    std::erase_if(shapes, [](const KernelShape& s) {
      const auto* g = std::get_if<GemmShape>(&s);
      return g == nullptr || !g->accumulate;
    });
  }
  if (run.accumulating_twins) {
    for (auto& s : shapes) std::get<GemmShape>(s).accumulate = false;
  }
  if (run.max_shapes_per_family > 0) {
    const KernelDatabase families;  // family_key() of a measured database
    std::map<std::string, std::size_t> taken;
    std::vector<KernelShape> kept;
    for (const auto& s : shapes) {
      if (taken[families.family_key(s)]++ < run.max_shapes_per_family) kept.push_back(s);
    }
    shapes = std::move(kept);
  }
  if (run.max_shapes > 0 && shapes.size() > run.max_shapes) shapes.resize(run.max_shapes);
  return shapes;
}

int repetitions_for(const SuiteRun& run, double seconds) {
  const int most = std::max(run.repetitions, 1);
  const int least = std::clamp(run.min_repetitions, 1, most);
  if (!(seconds > 0)) return most;
  const double wanted = std::ceil(run.time_per_shape / seconds);
  if (wanted >= most) return most;
  return std::max(least, static_cast<int>(wanted));
}

std::string shapes_json(const std::vector<KernelShape>& shapes) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& s : shapes) out.push_back(kernel_shape_json(s));
  return out.dump(1) + "\n";
}

}  // namespace trainsim::kernels
