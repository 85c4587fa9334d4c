#include "sim/cost/fp8_recipe.hpp"

#include <string>
#include <utility>
#include <variant>

#include "sim/cost/fp8_amax.hpp"
#include "sim/cost/kernel_specs.hpp"

namespace trainsim {

namespace {

bool is_fp8_cast(const KernelSpec& k) {
  const auto* m = std::get_if<MemoryShape>(&k.shape);
  return m != nullptr && (m->op == "fp8_cast_transpose" || m->op == "fp8_cast");
}

bool has_fp8_casts(const BlockPass& pass) {
  for (const auto& k : pass.kernels) {
    if (is_fp8_cast(k)) return true;
  }
  return false;
}

}  // namespace

std::int64_t tp_gather_calls(const BlockPass& forward) {
  std::int64_t n = 0;
  for (const auto& c : forward.collectives) {
    if (c.dim == Dim::kTP && c.kind == CollectiveKind::kAllGather) n += c.count;
  }
  return n;
}

void add_current_scaling(BlockPass& pass, const LayerShape& s, std::int64_t gathered) {
  if (!has_fp8_casts(pass)) return;  // a BF16 block of an FP8 plan (the LM head, the loss)
  std::vector<KernelSpec> kernels;
  kernels.reserve(pass.kernels.size() * 2);
  for (auto& k : pass.kernels) {
    if (is_fp8_cast(k)) {
      const auto& cast = std::get<MemoryShape>(k.shape);
      std::string name = k.name;
      name.replace(name.rfind("fp8_cast"), 8, "fp8_amax");
      kernels.push_back(elementwise(std::move(name), "fp8_amax", static_cast<double>(cast.rows),
                                    static_cast<double>(cast.cols)));
    }
    kernels.push_back(std::move(k));
  }
  pass.kernels = std::move(kernels);
  if (s.sp && s.tp > 1 && gathered > 0) {
    add_collective(pass.collectives, {CollectiveKind::kAllReduce, Dim::kTP,
                                      kAmaxBytes * static_cast<double>(gathered), gathered});
  }
}

}  // namespace trainsim
