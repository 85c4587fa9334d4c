#pragma once
// The model FLOPs of a training step, as frameworks count them for model TFLOP/s and MFU.
#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

/// Model FLOPs of one step's sequences (model_flops_per_sample of each). Under LoRA two thirds of
/// that: the frozen weights have no weight-gradient GEMMs, and NVIDIA's DGX Cloud benchmark
/// READMEs count a LoRA run's MFU with the same formula times 2/3 (the adapters' own FLOPs, a
/// rank's worth, left out as there).
double step_model_flops(const Model& model, const Plan& plan);

/// What a step of `step` seconds achieves: tokens per second over the whole job, model FLOP/s per
/// GPU, and MFU, those FLOP/s over the GPU's peak GEMM rate in the plan's precision.
struct StepRates {
  double tokens_per_s = 0;
  double model_flops_per_gpu = 0;
  double mfu = 0;
};
StepRates step_rates(const Model& model, const Platform& platform, const Plan& plan, double step);

}  // namespace trainsim
