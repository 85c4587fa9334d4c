// The off-grid shapes: kernels between the suite's grid points, drawn by a portable random
// stream, for checking the database's interpolation on measurements the grids do not hold.
#include <algorithm>
#include <cmath>
#include <set>

#include "kernels/host/shapes.hpp"
#include "sim/platform/kernel_db.hpp"

namespace trainsim::kernels {

namespace {

// A portable random stream (splitmix64), so that the off-grid shapes do not depend on the
// standard library's distributions.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  double uniform() {  // [0, 1)
    state_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }
  // log-uniform in [lo, hi], rounded to a multiple of `step` (at least `step`)
  std::int64_t log_uniform(double lo, double hi, std::int64_t step) {
    const double x = std::exp(std::log(lo) + uniform() * (std::log(hi) - std::log(lo)));
    return std::max<std::int64_t>(step, std::llround(x / static_cast<double>(step)) * step);
  }

 private:
  std::uint64_t state_;
};

}  // namespace

std::vector<KernelShape> offgrid_shapes(const SuiteOptions& opt, std::size_t per_family,
                                        std::uint64_t seed) {
  Random rng(seed);
  std::vector<KernelShape> out;
  std::set<std::string> seen;
  const double glo = static_cast<double>(opt.gemm_grid_lo),
               ghi = static_cast<double>(opt.gemm_grid_hi);
  for (auto precision : opt.precisions) {
    const DType dtype = precision == Precision::kFP8 ? DType::kFP8 : DType::kBF16;
    for (std::size_t i = 0; i < per_family; ++i) {
      const auto m = rng.log_uniform(glo, ghi, 128), n = rng.log_uniform(glo, ghi, 128),
                 k = rng.log_uniform(glo, ghi, 128);
      add_unique(out, seen, GemmShape{m, n, k, dtype});
    }
  }
  const double slo = static_cast<double>(opt.attention_seqs.front()),
               shi = static_cast<double>(opt.attention_seqs.back());
  for (bool causal : {true, false}) {
    for (auto d : opt.attention_grid_head_dims) {
      for (auto pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
        for (std::size_t i = 0; i < per_family; ++i) {
          const auto h = rng.log_uniform(4, 48, 1), seq = rng.log_uniform(slo, shi, 256);
          add_unique(out, seen, AttentionShape{1, seq, h, h, d, causal, pass, DType::kBF16});
        }
      }
    }
  }
  const double mlo = static_cast<double>(opt.memory_grid_lo),
               mhi = static_cast<double>(opt.memory_grid_hi);
  for (const auto& op : memory_ops()) {
    if (!op.in_suite) continue;
    const bool flat = op.name == "adam" || op.name == "grad_norm" || op.name == "copy";
    for (std::size_t i = 0; i < per_family; ++i) {
      const auto elements = rng.log_uniform(mlo, mhi, 512);
      // Between the grid's widths (a router's experts), else 1024 to 16384 wide.
      const auto [lo, hi] = std::minmax_element(op.grid_cols.begin(), op.grid_cols.end());
      const bool narrow = *hi < 1024;
      const auto cols = flat ? elements
                        : narrow
                            ? rng.log_uniform(static_cast<double>(*lo), static_cast<double>(*hi), 8)
                            : rng.log_uniform(1024, 16384, 512);
      const auto m = op.row_multiple;
      const auto rows = flat ? 1 : std::max<std::int64_t>(m, elements / cols / m * m);
      add_unique(out, seen, MemoryShape{std::string(op.name), rows, cols});
    }
  }
  return out;
}

}  // namespace trainsim::kernels
