#include "sim/cost/fp8_weights.hpp"

#include <variant>

#include "sim/cost/kernel_specs.hpp"

namespace trainsim {

BlockPass fp8_weight_casts(const BlockPass& forward, bool fp8_weights) {
  BlockPass out;
  for (const auto& k : forward.kernels) {
    const auto* g = std::get_if<GemmShape>(&k.shape);
    if (g == nullptr || g->dtype != DType::kFP8) continue;
    KernelSpec cast = elementwise(k.name + ".weight_fp8_cast",
                                  fp8_weights ? "fp8_transpose" : "fp8_cast_transpose",
                                  static_cast<double>(g->n * g->groups), static_cast<double>(g->k));
    cast.launches = k.launches;
    out.kernels.push_back(std::move(cast));
  }
  return out;
}

}  // namespace trainsim
