#pragma once
// What a training step costs beyond its kernels measured one at a time: the few platform
// parameters no datasheet gives, fitted once per platform on the fitting half of the step-time
// validation rows (results/calibrate.py), beside the platform's overlap.compute_slowdown. Absent
// from a platform file: all neutral (the kernels' times as measured, no spread, no band).
#include <cstdint>
#include <utility>

namespace trainsim {

/// A prediction's band: bounds on the relative residual (measured / predicted - 1) that hold 80 %
/// of predictions, from the rows a calibration was fitted on (results/calibrate.py: the order
/// statistics of an 80 % conformal prediction interval). The plain form (residual_p10,
/// residual_p90) is the same for every plan; the locally weighted form (per_spread_p10,
/// per_spread_p90) scales with the P10-P90 width of the plan's kernels in the kernel database
/// (kernel_spread()): wider where the kernels the step runs vary more. The weighted form is used
/// where fitted and the plan has a measured spread, the plain one otherwise.
struct ResidualBand {
  double p10 = 0;
  double p90 = 0;
  double per_spread_p10 = 0;  // residual / kernel spread width
  double per_spread_p90 = 0;
  bool empty() const { return p90 <= p10; }
  bool weighted() const { return per_spread_p90 > per_spread_p10; }
  /// The relative bounds for a plan whose kernels' P10-P90 width is `spread_width` (0: none).
  std::pair<double, double> bounds(double spread_width) const {
    if (weighted() && spread_width > 0) {
      return {per_spread_p10 * spread_width, per_spread_p90 * spread_width};
    }
    return {p10, p90};
  }
  double low(double predicted, double spread_width = 0) const {
    return predicted * (1 + bounds(spread_width).first);
  }
  double high(double predicted, double spread_width = 0) const {
    return predicted * (1 + bounds(spread_width).second);
  }
  bool holds(double predicted, double measured, double spread_width = 0) const {
    return measured >= low(predicted, spread_width) && measured <= high(predicted, spread_width);
  }
};

struct Calibration {
  /// Share of the kernel database's rate that compute-bound kernels (GEMMs, attention) sustain
  /// inside a training step: power-limited clocks under continuous load, caches and memory shared
  /// with the kernels around them. 1: as measured in isolation.
  double sustained_compute = 1;
  /// Further share of their database rate that FP8 GEMMs sustain in a step, beyond
  /// sustained_compute: a fitted parameter, 1 where the FP8 and BF16 GEMMs of a training step
  /// keep the same fraction of their isolated rates. The likely physical cause of a value below 1
  /// is the power limit: FP8 tensor-core work draws more power per second than BF16 work, so the
  /// clocks drop further under continuous FP8 load than in a short timed loop.
  double sustained_fp8_gemm = 1;
  /// Relative spread (standard deviation) of one GPU's compute speed across a cluster. A
  /// synchronous step runs at the pace of its slowest GPU: compute-bound kernels take
  /// 1 + spread x E[max of N standard normals] times longer on N GPUs.
  double gpu_speed_spread = 0;
  /// The band a prediction's step time carries (the file's residual_p10 and residual_p90).
  ResidualBand band;
};

/// E[max of n independent standard normals], Blom's approximation Phi^-1((n - 0.375) /
/// (n + 0.25)): 0 for n = 1, 1.049 for 4, 3.234 for 1024 (by quadrature 0, 1.029, 3.248).
double expected_max_standard_normal(std::int64_t n);

/// Phi^-1(p) for 0 < p < 1 (Acklam's rational approximation, relative error below 1.2e-9).
double standard_normal_quantile(double p);

/// Factor on a compute-bound kernel's measured time in a step run on `gpus` GPUs; an FP8 GEMM
/// (`fp8_gemm`) takes 1 / sustained_fp8_gemm on top.
double compute_time_factor(const Calibration& c, std::int64_t gpus, bool fp8_gemm = false);

}  // namespace trainsim
