#include "sim/cost/kernel_specs.hpp"

#include <cmath>
#include <utility>

namespace trainsim {

std::int64_t whole(double x) {
  return std::llround(x);
}

KernelSpec gemm(std::string name, double m, double k, double n, DType dtype, std::int64_t groups) {
  KernelShape shape = GemmShape{whole(m), whole(n), whole(k), dtype, groups};
  return {std::move(name), KernelKind::kGemm, shape_flops(shape), shape_bytes(shape), shape, 1};
}

KernelSpec memory(std::string name, KernelKind kind, std::string op, double rows, double cols) {
  KernelShape shape = MemoryShape{std::move(op), whole(rows), whole(cols)};
  return {std::move(name), kind, 0.0, shape_bytes(shape), shape, 1};
}

KernelSpec elementwise(std::string name, std::string op, double rows, double cols) {
  return memory(std::move(name), KernelKind::kElementwise, std::move(op), rows, cols);
}

void linear(std::vector<KernelSpec>& k, const std::string& name, double m, double kk, double n,
            DType dtype, std::int64_t groups) {
  const double rows = m * static_cast<double>(groups);
  if (dtype == DType::kFP8) {
    k.push_back(elementwise(name + ".fp8_cast", "fp8_cast_transpose", rows, kk));
  }
  k.push_back(gemm(name, m, kk, n, dtype, groups));
}

void gemm_backward(std::vector<KernelSpec>& k, const std::string& name, double m, double kk,
                   double n, DType dtype, std::int64_t groups) {
  const double rows = m * static_cast<double>(groups);
  if (dtype == DType::kFP8) {
    k.push_back(elementwise(name + ".grad_fp8_cast", "fp8_cast_transpose", rows, n));
  }
  k.push_back(gemm(name + ".dgrad", m, n, kk, dtype, groups));
  k.push_back(gemm(name + ".wgrad", kk, m, n, dtype, groups));
}

}  // namespace trainsim
