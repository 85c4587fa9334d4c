#pragma once
// Kernel time: the slower of compute and memory traffic, each at the platform's achieved
// fraction of the sheet value for that kind of kernel. Every time records where it came from.
#include <array>
#include <string>

#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"
#include "sim/platform/time_spread.hpp"

namespace trainsim {

enum class KernelKind { kGemm, kAttention, kElementwise, kOptimizer };
const char* to_string(KernelKind kind);

/// Where a kernel time came from, best first.
enum class TimeSource { kMeasured, kInterpolated, kNearest, kPublished, kRoofline };
const char* to_string(TimeSource source);
/// Every source, in the order reports list them.
inline constexpr std::array kTimeSources = {TimeSource::kMeasured, TimeSource::kInterpolated,
                                            TimeSource::kNearest, TimeSource::kPublished,
                                            TimeSource::kRoofline};

struct KernelTime {
  double seconds = 0;
  TimeSource source = TimeSource::kRoofline;
  TimeSpread spread;  // measured run-to-run spread (none for the roofline)
};

/// Peak FLOP/s of the tensor cores for GEMMs in `precision` (other kernels run in BF16).
double peak_flops(const Platform& platform, Precision precision, KernelKind kind);

KernelTime roofline_time(const Platform& platform, Precision precision, KernelKind kind,
                         double flops, double bytes);

}  // namespace trainsim
