#include "sim/cost/fp8_amax.hpp"

#include <variant>

namespace trainsim {

namespace {

constexpr double kForwardAmaxesPerGemm = 3;
constexpr double kBackwardAmaxesPerGemm = 2;

void add_reduction(PassCost& pass, double bytes) {
  add_collective(pass.collectives, {CollectiveKind::kAllReduce, Dim::kStage, bytes, 1, false});
}

}  // namespace

std::int64_t fp8_gemm_calls(const PassCost& pass) {
  std::int64_t n = 0;
  for (const KernelCost& k : pass.kernels) {
    const auto* gemm = std::get_if<GemmShape>(&k.shape);
    if (gemm && gemm->dtype == DType::kFP8) n += k.count * gemm->groups;
  }
  return n;
}

void add_amax_reductions(StageCost& stage) {
  const auto gemms = static_cast<double>(fp8_gemm_calls(stage.forward));
  if (gemms == 0) return;
  add_reduction(stage.forward, gemms * kForwardAmaxesPerGemm * kAmaxBytes);
  add_reduction(stage.backward, gemms * kBackwardAmaxesPerGemm * kAmaxBytes);
  add_reduction(stage.backward_input, gemms * kBackwardAmaxesPerGemm * kAmaxBytes);
  if (!stage.backward_deferring_lm_head_wgrad.kernels.empty()) {
    add_reduction(stage.backward_deferring_lm_head_wgrad,
                  gemms * kBackwardAmaxesPerGemm * kAmaxBytes);
  }
}

}  // namespace trainsim
