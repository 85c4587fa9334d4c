#include "kernels/host/interpolation.hpp"

#include <cmath>

namespace trainsim::kernels {

std::string kernel_class(const KernelShape& shape) {
  if (std::holds_alternative<AttentionShape>(shape)) return "attention";
  if (std::holds_alternative<MemoryShape>(shape)) return "memory";
  // Accumulating GEMMs sit on a grid of their own, one value per octave instead of two.
  return op_name(shape) + (std::get<GemmShape>(shape).accumulate ? " acc" : "");
}

namespace {

// Interpolated times count under the kernel's class; times taken from the nearest measured shape
// (no complete cell) under "<class> (nearest)", so that each method has its own error.
std::string error_class(const KernelShape& shape, const KernelDbHit& hit) {
  const std::string cls = kernel_class(shape);
  return hit.match == KernelDbMatch::kNearest ? cls + " (nearest)" : cls;
}

}  // namespace

std::set<std::string> grid_labels(const SuiteOptions& options) {
  std::set<std::string> out;
  for (const auto& s : suite_shapes({}, options)) out.insert(shape_label(s));
  return out;
}

ErrorsByClass held_back_errors(const KernelDatabase& db, const std::set<std::string>& grid,
                               std::size_t every) {
  std::map<std::string, std::vector<KernelDbEntry>> families;
  for (const auto& e : db.entries()) families[db.family_key(e.shape)].push_back(e);
  ErrorsByClass errors;
  for (const auto& [key, entries] : families) {
    std::size_t nth = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (grid.count(shape_label(entries[i].shape)) == 0 || nth++ % every != 0) continue;
      auto rest = entries;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
      const KernelDatabase held(db.kind(), db.meta(), std::move(rest));
      if (const auto hit = held.lookup(entries[i].shape)) {
        errors[error_class(entries[i].shape, *hit)].push_back(
            std::abs(hit->seconds / entries[i].median_s - 1));
      }
    }
  }
  return errors;
}

ErrorsByClass offgrid_errors(const KernelDatabase& db, const std::vector<KernelDbEntry>& measured) {
  ErrorsByClass errors;
  for (const auto& e : measured) {
    const auto hit = db.lookup(e.shape);
    if (!hit || hit->match == KernelDbMatch::kExact) continue;
    errors[error_class(e.shape, *hit)].push_back(std::abs(hit->seconds / e.median_s - 1));
  }
  return errors;
}

}  // namespace trainsim::kernels
