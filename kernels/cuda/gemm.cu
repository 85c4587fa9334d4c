// BF16 and FP8 GEMMs through cuBLASLt: C[m x n] (BF16) = A[m x k] B[k x n], with B stored as
// its transpose W[n x k] (a weight), i.e. cuBLASLt's "TN" layout, the one it supports for FP8
// on Hopper; the cost model's forward, data-gradient and weight-gradient GEMMs are all timed in
// it. FP32 accumulation. The algorithm is cuBLASLt's first heuristic choice for the shape.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/runner.hpp"
#include "kernels/host/stats.hpp"

#define TS_CUBLAS(call)                                                                           \
  do {                                                                                            \
    const cublasStatus_t ts_st_ = (call);                                                         \
    if (ts_st_ != CUBLAS_STATUS_SUCCESS) {                                                        \
      ::trainsim::kernels::gpu_fail(#call, __FILE__, __LINE__,                                    \
                                    "cuBLAS status " + std::to_string(static_cast<int>(ts_st_))); \
    }                                                                                             \
  } while (0)

namespace trainsim::kernels {

namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;  // cuBLASLt's recommendation on Hopper

template <class T>
__device__ float to_float(T x) {
  return static_cast<float>(x);
}
template <>
__device__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

// Reference: C[i][j] = sum_l A[i][l] W[j][l] for sampled (i, j), in fp32 from the same inputs.
template <class T>
__global__ void reference_dots(const T* a, const T* w, std::int64_t k, const std::int64_t* rows,
                               const std::int64_t* cols, int samples, float* out) {
  const int s = static_cast<int>(blockIdx.x);
  if (s >= samples) return;
  const T* ar = a + rows[s] * k;
  const T* wr = w + cols[s] * k;
  float acc = 0;
  for (std::int64_t l = threadIdx.x; l < k; l += blockDim.x)
    acc += to_float(ar[l]) * to_float(wr[l]);
  __shared__ float part[256];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned step = blockDim.x / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) part[threadIdx.x] += part[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[s] = part[0];
}

class GemmRunner final : public KernelRunner {
 public:
  GemmRunner(const GemmShape& g, const RunnerContext& ctx) : g_(g), ctx_(ctx) {
    handle_ = static_cast<cublasLtHandle_t>(ctx.cublaslt);
    in_elem_ = g.dtype == DType::kFP8 ? Elem::kFP8 : Elem::kBF16;
    const cudaDataType_t in_type = g.dtype == DType::kFP8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    const auto m = static_cast<std::uint64_t>(g.m), n = static_cast<std::uint64_t>(g.n),
               k = static_cast<std::uint64_t>(g.k);
    const double set_bytes = static_cast<double>((m * k + n * k) * elem_size(in_elem_));
    sets_ = rotating_sets(set_bytes, ctx.l2_bytes, ctx.budget_bytes);
    for (int s = 0; s < sets_; ++s) {
      a_.emplace_back(m * k * elem_size(in_elem_));
      w_.emplace_back(n * k * elem_size(in_elem_));
      // Scaled so that FP8 products stay well inside e4m3's range.
      fill_random(a_.back().get(), m * k, in_elem_, 2 * static_cast<std::uint64_t>(s) + 1, 1.0f);
      fill_random(w_.back().get(), n * k, in_elem_, 2 * static_cast<std::uint64_t>(s) + 2, 1.0f);
    }
    c_ = DeviceBuffer(m * n * 2);
    workspace_ = DeviceBuffer(kWorkspaceBytes);

    TS_CUBLAS(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    TS_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    TS_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    // Column-major view: C^T (n x m) = W (n x k, stored k x n, transposed) A^T (k x m).
    TS_CUBLAS(cublasLtMatrixLayoutCreate(&la_, in_type, k, n, static_cast<std::int64_t>(k)));
    TS_CUBLAS(cublasLtMatrixLayoutCreate(&lb_, in_type, k, m, static_cast<std::int64_t>(k)));
    TS_CUBLAS(cublasLtMatrixLayoutCreate(&lc_, CUDA_R_16BF, n, m, static_cast<std::int64_t>(n)));
    cublasLtMatmulPreference_t pref = nullptr;
    TS_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const std::size_t ws = kWorkspaceBytes;
    TS_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &ws, sizeof(ws)));
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, desc_, la_, lb_, lc_, lc_,
                                                             pref, 1, &heuristic_, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
      throw std::runtime_error("cuBLASLt has no algorithm for " + shape_label(g));
    }
    TS_CUDA(cudaStreamSynchronize(ctx.stream));
  }

  ~GemmRunner() override {
    if (la_ != nullptr) cublasLtMatrixLayoutDestroy(la_);
    if (lb_ != nullptr) cublasLtMatrixLayoutDestroy(lb_);
    if (lc_ != nullptr) cublasLtMatrixLayoutDestroy(lc_);
    if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
  }

  int sets() const override { return sets_; }

  void launch(int iteration) override {
    const auto s = static_cast<std::size_t>(iteration % sets_);
    const float alpha = 1.0f, beta = 0.0f;
    TS_CUBLAS(cublasLtMatmul(handle_, desc_, &alpha, w_[s].get(), la_, a_[s].get(), lb_, &beta,
                             c_.get(), lc_, c_.get(), lc_, &heuristic_.algo, workspace_.get(),
                             kWorkspaceBytes, ctx_.stream));
  }

  void check() override {
    const std::size_t m = static_cast<std::size_t>(g_.m), n = static_cast<std::size_t>(g_.n);
    fill_poison(c_.get(), m * n, Elem::kBF16, ctx_.stream);
    launch(0);
    // 256 sampled elements of C against fp32 dot products of the same inputs.
    constexpr int kSamples = 256;
    std::mt19937_64 rng(42);
    std::vector<std::int64_t> rows(kSamples), cols(kSamples);
    for (int i = 0; i < kSamples; ++i) {
      rows[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(rng() % m);
      cols[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(rng() % n);
    }
    rows[0] = 0;
    cols[0] = 0;
    rows[1] = static_cast<std::int64_t>(m - 1);
    cols[1] = static_cast<std::int64_t>(n - 1);
    DeviceBuffer d_rows(kSamples * sizeof(std::int64_t)), d_cols(kSamples * sizeof(std::int64_t)),
        d_ref(kSamples * sizeof(float));
    TS_CUDA(cudaMemcpy(d_rows.get(), rows.data(), kSamples * sizeof(std::int64_t),
                       cudaMemcpyHostToDevice));
    TS_CUDA(cudaMemcpy(d_cols.get(), cols.data(), kSamples * sizeof(std::int64_t),
                       cudaMemcpyHostToDevice));
    const auto* r = static_cast<const std::int64_t*>(d_rows.get());
    const auto* c = static_cast<const std::int64_t*>(d_cols.get());
    if (g_.dtype == DType::kFP8) {
      reference_dots<<<kSamples, 256, 0, ctx_.stream>>>(
          static_cast<const __nv_fp8_e4m3*>(a_[0].get()),
          static_cast<const __nv_fp8_e4m3*>(w_[0].get()), g_.k, r, c, kSamples,
          static_cast<float*>(d_ref.get()));
    } else {
      reference_dots<<<kSamples, 256, 0, ctx_.stream>>>(
          static_cast<const __nv_bfloat16*>(a_[0].get()),
          static_cast<const __nv_bfloat16*>(w_[0].get()), g_.k, r, c, kSamples,
          static_cast<float*>(d_ref.get()));
    }
    TS_LAUNCHED();
    TS_CUDA(cudaStreamSynchronize(ctx_.stream));
    if (count_nonfinite_bf16(c_.get(), m * n, ctx_.stream) != 0) {
      throw std::runtime_error(shape_label(g_) + ": output not fully written (or not finite)");
    }
    std::vector<float> ref(kSamples);
    copy_to_host_as_float(d_ref.get(), kSamples, Elem::kF32, ref.data());
    double num = 0, den = 0;
    for (std::size_t i = 0; i < kSamples; ++i) {
      const auto* base = static_cast<const __nv_bfloat16*>(c_.get());
      float got = 0;
      copy_to_host_as_float(
          base + static_cast<std::size_t>(rows[i]) * n + static_cast<std::size_t>(cols[i]), 1,
          Elem::kBF16, &got);
      const double d = static_cast<double>(got) - ref[i];
      num += d * d;
      den += static_cast<double>(ref[i]) * ref[i];
    }
    const double err = std::sqrt(num / den);
    if (!(err < 1e-2)) {  // BF16 output rounding; accumulation order
      throw std::runtime_error(shape_label(g_) + ": relative error " + std::to_string(err) +
                               " against the reference");
    }
  }

 private:
  GemmShape g_;
  RunnerContext ctx_;
  cublasLtHandle_t handle_ = nullptr;
  Elem in_elem_ = Elem::kBF16;
  int sets_ = 1;
  std::vector<DeviceBuffer> a_, w_;
  DeviceBuffer c_, workspace_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

}  // namespace

std::unique_ptr<KernelRunner> make_gemm_runner(const GemmShape& shape, const RunnerContext& c) {
  return std::make_unique<GemmRunner>(shape, c);
}

}  // namespace trainsim::kernels
