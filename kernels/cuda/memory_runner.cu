// The runner of the suite's memory-bound ops (memory_kernels.cu, routing_kernels.cu): their
// tensors allocated, rotated through more memory than L2 and filled, the kernel checked on a small
// shape against its double-precision host reference (kernels/host/memory_reference), then
// launched again and again.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/memory_kernels.cuh"
#include "kernels/cuda/runner.hpp"
#include "kernels/host/memory_reference.hpp"
#include "kernels/host/stats.hpp"

namespace trainsim::kernels {

namespace {

double relative_error(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;  // unwritten (poisoned) or NaN
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// ---------------------------------------------------------------- the runner

class MemoryRunner final : public KernelRunner {
 public:
  MemoryRunner(MemoryShape shape, const RunnerContext& ctx, bool rotate)
      : shape_(std::move(shape)), ctx_(ctx) {
    const auto R = static_cast<std::size_t>(shape_.rows), C = static_cast<std::size_t>(shape_.cols);
    specs_ = memory_tensors(shape_.op, R, C);
    double set_bytes = 0;
    for (const auto& t : specs_) set_bytes += static_cast<double>(t.count * elem_size(t.elem));
    sets_ = rotate ? rotating_sets(set_bytes, ctx.l2_bytes, ctx.budget_bytes) : 1;
    for (int s = 0; s < sets_; ++s) {
      std::vector<DeviceBuffer> set;
      for (std::size_t i = 0; i < specs_.size(); ++i) {
        const auto& t = specs_[i];
        set.emplace_back(t.count * elem_size(t.elem));
        if (t.role == Role::kOut) {
          fill_poison(set.back().get(), t.count, t.elem, ctx.stream);
        } else if (t.permutation) {
          fill_permutation(set.back().get(), t.count, 1000 * static_cast<std::uint64_t>(s) + i,
                           ctx.stream);
        } else {
          fill_random(set.back().get(), t.count, t.elem, 1000 * static_cast<std::uint64_t>(s) + i,
                      t.scale, t.int_range, ctx.stream);
          if (t.non_negative) make_non_negative_f32(set.back().get(), t.count, ctx.stream);
        }
      }
      buffers_.push_back(std::move(set));
    }
    TS_CUDA(cudaStreamSynchronize(ctx.stream));
  }

  int sets() const override { return sets_; }
  std::string source() const override { return "trainsim"; }

  void launch(int iteration) override {
    const auto& set = buffers_[static_cast<std::size_t>(iteration % sets_)];
    std::vector<void*> ptrs;
    for (const auto& b : set) ptrs.push_back(b.get());
    launch_memory_op(shape_.op, static_cast<std::size_t>(shape_.rows),
                     static_cast<std::size_t>(shape_.cols), ptrs.data(), ctx_.stream);
  }

  void check() override {
    // The same kernel on a small shape of the op, against the double-precision reference.
    const bool flat = shape_.rows == 1;
    MemoryShape small{shape_.op, flat ? 1 : 48,
                      flat ? 8192 : std::min<std::int64_t>(shape_.cols, 2048)};
    MemoryRunner r(small, ctx_, false);
    HostTensors before;
    for (std::size_t i = 0; i < r.specs_.size(); ++i) {
      before.emplace_back(r.specs_[i].count);
      copy_to_host_as_float(r.buffers_[0][i].get(), r.specs_[i].count, r.specs_[i].elem,
                            before.back().data());
    }
    r.launch(0);
    TS_CUDA(cudaStreamSynchronize(ctx_.stream));
    const auto want = memory_reference(small.op, static_cast<std::size_t>(small.rows),
                                       static_cast<std::size_t>(small.cols), before);
    std::size_t o = 0;
    for (std::size_t i = 0; i < r.specs_.size(); ++i) {
      if (r.specs_[i].role == Role::kIn) continue;
      std::vector<float> got(r.specs_[i].count);
      copy_to_host_as_float(r.buffers_[0][i].get(), got.size(), r.specs_[i].elem, got.data());
      if (small.op == "grad_norm") {
        double s = 0;
        for (float g : got) s += g;
        got = {static_cast<float>(s)};
      }
      const double err = relative_error(got, want.at(o++));
      // BF16 outputs carry 8 bits of mantissa (FP8 ones are rounded as their reference rounds
      // them); fp32 outputs far less error.
      const double tol = r.specs_[i].elem == Elem::kF32 ? 1e-4 : 1e-2;
      if (!(err <= tol)) {
        throw std::runtime_error(shape_.op + ": output " + std::to_string(i) +
                                 " differs from the reference: relative error " +
                                 std::to_string(err));
      }
    }
  }

 private:
  MemoryShape shape_;
  RunnerContext ctx_;
  std::vector<TensorSpec> specs_;
  int sets_ = 1;
  std::vector<std::vector<DeviceBuffer>> buffers_;
};

}  // namespace

std::unique_ptr<KernelRunner> make_memory_runner(const MemoryShape& shape, const RunnerContext& c) {
  const auto specs = memory_tensors(shape.op, static_cast<std::size_t>(shape.rows),
                                    static_cast<std::size_t>(shape.cols));
  if (specs.empty()) return nullptr;
  // Vector widths: 8 BF16 (or 4 fp32) elements per access, along a row.
  if (shape.cols % 8 != 0) return nullptr;
  return std::make_unique<MemoryRunner>(shape, c, true);
}

}  // namespace trainsim::kernels
