#include "sim/reshard/reshard.hpp"

#include <algorithm>

#include "sim/reshard/checks.hpp"
#include "sim/reshard/layout_spec.hpp"

namespace trainsim {

bool ReshardResult::has_errors() const {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

ReshardResult reshard(const Model& model, const Platform& platform, const Plan& from,
                      const Plan& to, const std::optional<std::filesystem::path>& checkpoint) {
  ReshardResult r;
  r.model_name = model.name;
  r.platform_name = platform.name;
  r.from = shard_layout(model, platform, from, layout_origin("--from"));
  r.to = shard_layout(model, platform, to, layout_origin("--to"));
  if (checkpoint) {
    r.checkpoint = read_checkpoint(*checkpoint);
    r.diagnostics = compare_checkpoint(*r.checkpoint, r.from);
  }
  for (auto& d : check_reshard({model, platform, r.from, r.to})) {
    r.diagnostics.push_back(std::move(d));
  }
  r.plan = plan_conversion(r.from, r.to, platform);
  r.same_layout_load_s = plan_conversion(r.from, r.from, platform).load_s();
  return r;
}

}  // namespace trainsim
