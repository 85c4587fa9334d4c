#pragma once
// What a training step costs beyond its kernels measured one at a time: the few platform
// parameters no datasheet gives, fitted once per platform on the fitting half of the step-time
// validation rows (results/calibrate.py), beside the platform's overlap.compute_slowdown. Absent
// from a platform file: all neutral (the kernels' times as measured, no spread, no band).
#include <cstdint>

namespace trainsim {

/// A prediction's band: bounds on the relative residual (measured / predicted - 1) that hold 80 %
/// of predictions, from the rows a calibration was fitted on (results/calibrate.py: the order
/// statistics of an 80 % conformal prediction interval).
struct ResidualBand {
  double p10 = 0;
  double p90 = 0;
  bool empty() const { return p90 <= p10; }
  double low(double predicted) const { return predicted * (1 + p10); }
  double high(double predicted) const { return predicted * (1 + p90); }
  bool holds(double predicted, double measured) const {
    return measured >= low(predicted) && measured <= high(predicted);
  }
};

struct Calibration {
  /// Share of the kernel database's rate that compute-bound kernels (GEMMs, attention) sustain
  /// inside a training step: power-limited clocks under continuous load, caches and memory shared
  /// with the kernels around them. 1: as measured in isolation.
  double sustained_compute = 1;
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

/// Factor on a compute-bound kernel's measured time in a step run on `gpus` GPUs.
double compute_time_factor(const Calibration& c, std::int64_t gpus);

}  // namespace trainsim
