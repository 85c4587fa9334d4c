#include "sim/cost/roofline.hpp"

#include <algorithm>

namespace trainsim {

const char* to_string(KernelKind kind) {
  switch (kind) {
    case KernelKind::kGemm:
      return "gemm";
    case KernelKind::kAttention:
      return "attention";
    case KernelKind::kElementwise:
      return "elementwise";
    case KernelKind::kOptimizer:
      return "optimizer";
  }
  return "?";
}

const char* to_string(TimeSource source) {
  switch (source) {
    case TimeSource::kMeasured:
      return "measured";
    case TimeSource::kInterpolated:
      return "interpolated";
    case TimeSource::kNearest:
      return "nearest";
    case TimeSource::kPublished:
      return "published";
    case TimeSource::kRoofline:
      return "roofline";
  }
  return "?";
}

double peak_flops(const Platform& platform, Precision precision, KernelKind kind) {
  if (kind == KernelKind::kGemm && precision == Precision::kFP8) return platform.gpu.peak_fp8_flops;
  return platform.gpu.peak_bf16_flops;
}

KernelTime roofline_time(const Platform& platform, Precision precision, KernelKind kind,
                         double flops, double bytes) {
  double efficiency = 1.0;
  switch (kind) {
    case KernelKind::kGemm:
      efficiency =
          precision == Precision::kFP8 ? platform.efficiency.gemm_fp8 : platform.efficiency.gemm;
      break;
    case KernelKind::kAttention:
      efficiency = platform.efficiency.attention;
      break;
    case KernelKind::kElementwise:
    case KernelKind::kOptimizer:
      efficiency = platform.efficiency.memory;
      break;
  }
  const double compute = kind == KernelKind::kElementwise || kind == KernelKind::kOptimizer
                             ? 0.0
                             : flops / (peak_flops(platform, precision, kind) * efficiency);
  const double memory = bytes / (platform.gpu.hbm_bandwidth * platform.efficiency.memory);
  return {std::max(compute, memory), TimeSource::kRoofline, {}};
}

}  // namespace trainsim
