// BF16 and FP8 GEMMs through cuBLASLt: C[m x n] (BF16) = A[m x k] B[k x n], in the shape's
// layout (GemmLayout): tn, B stored as its transpose W[n x k] (a weight), the one cuBLASLt
// supports for FP8 on Hopper and the one the cost model's GEMMs use; BF16 also nn and nt, the
// layouts of a data and a weight gradient. FP32 accumulation. The algorithm is cuBLASLt's first
// heuristic choice for the shape. FP8 as Transformer Engine runs it: E4M3 inputs with per-tensor
// scales, BF16 output. A grouped GEMM (an MoE layer's local experts, equal tokens per expert as
// under balanced routing) is one strided-batched cuBLASLt launch over the groups. An accumulating
// GEMM (GemmShape::accumulate) adds its product into an FP32 C in the epilogue, beta = 1, as
// Transformer Engine runs a weight gradient into Megatron-LM's FP32 main gradient.
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

// Reference: C[s] = sum_l A[arow[s] + l * astep] B[bcol[s] + l * bstep] for sampled elements,
// in fp32 from the same inputs: arow and bcol are the offsets of the element's row of A and
// column of B (over all groups), astep and bstep the strides along k of the layout.
template <class T>
__global__ void reference_dots(const T* a, const T* w, std::int64_t k, const std::int64_t* arow,
                               const std::int64_t* bcol, std::int64_t astep, std::int64_t bstep,
                               int samples, float* out) {
  const int s = static_cast<int>(blockIdx.x);
  if (s >= samples) return;
  const T* ar = a + arow[s];
  const T* wc = w + bcol[s];
  float acc = 0;
  for (std::int64_t l = threadIdx.x; l < k; l += blockDim.x)
    acc += to_float(ar[l * astep]) * to_float(wc[l * bstep]);
  __shared__ float part[256];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned step = blockDim.x / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) part[threadIdx.x] += part[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[s] = part[0];
}

// Per-tensor FP8 scales as Transformer Engine passes them (the inverse scales of the activation
// and the weight, read by the GEMM's epilogue); not 1, so that the check sees them applied.
constexpr float kScaleA = 0.5f, kScaleB = 0.25f;

class GemmRunner final : public KernelRunner {
 public:
  GemmRunner(const GemmShape& g, const RunnerContext& ctx) : g_(g), ctx_(ctx) {
    handle_ = static_cast<cublasLtHandle_t>(ctx.cublaslt);
    fp8_ = g.dtype == DType::kFP8;
    in_elem_ = fp8_ ? Elem::kFP8 : Elem::kBF16;
    const cudaDataType_t in_type = fp8_ ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    const auto m = static_cast<std::uint64_t>(g.m), n = static_cast<std::uint64_t>(g.n),
               k = static_cast<std::uint64_t>(g.k), groups = static_cast<std::uint64_t>(g.groups);
    const double set_bytes = static_cast<double>(groups * (m * k + n * k) * elem_size(in_elem_));
    sets_ = rotating_sets(set_bytes, ctx.l2_bytes, ctx.budget_bytes);
    for (int s = 0; s < sets_; ++s) {
      a_.emplace_back(groups * m * k * elem_size(in_elem_));
      w_.emplace_back(groups * n * k * elem_size(in_elem_));
      // Scaled so that FP8 products stay well inside e4m3's range.
      fill_random(a_.back().get(), groups * m * k, in_elem_, 2 * static_cast<std::uint64_t>(s) + 1,
                  1.0f);
      fill_random(w_.back().get(), groups * n * k, in_elem_, 2 * static_cast<std::uint64_t>(s) + 2,
                  1.0f);
    }
    c_ = DeviceBuffer(groups * m * n * out_size());
    if (g.accumulate) fill_random(c_.get(), groups * m * n, Elem::kF32, 97, 1.0f);
    workspace_ = DeviceBuffer(kWorkspaceBytes);
    build(in_type);
    TS_CUDA(cudaStreamSynchronize(ctx.stream));
  }

  ~GemmRunner() override { release(); }

  int sets() const override { return sets_; }
  std::string source() const override { return source_; }

  void launch(int iteration) override {
    const auto s = static_cast<std::size_t>(iteration % sets_);
    const float alpha = 1.0f, beta = beta_();
    TS_CUBLAS(cublasLtMatmul(handle_, desc_, &alpha, w_[s].get(), la_, a_[s].get(), lb_, &beta,
                             c_.get(), lc_, c_.get(), lc_, &heuristic_.algo, workspace_.get(),
                             kWorkspaceBytes, ctx_.stream));
  }

  void check() override;

 private:
  void layout(cublasLtMatrixLayout_t* l, cudaDataType_t type, std::uint64_t rows,
              std::uint64_t cols) {
    TS_CUBLAS(cublasLtMatrixLayoutCreate(l, type, rows, cols, static_cast<std::int64_t>(rows)));
    if (g_.groups > 1) {
      const auto count = static_cast<std::int32_t>(g_.groups);
      const auto stride = static_cast<std::int64_t>(rows * cols);
      TS_CUBLAS(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                 sizeof(count)));
      TS_CUBLAS(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                 &stride, sizeof(stride)));
    }
  }

  // The FP8 set-ups tried in turn, Transformer Engine's first.
  struct Fp8Setup {
    bool scales;       // per-tensor inverse scales of A and B
    bool split_accum;  // CUBLASLT_MATMUL_DESC_FAST_ACCUM set to 0
    const char* what;
  };

  void describe(cudaDataType_t in_type, const Fp8Setup* fp8) {
    const auto m = static_cast<std::uint64_t>(g_.m), n = static_cast<std::uint64_t>(g_.n),
               k = static_cast<std::uint64_t>(g_.k);
    TS_CUBLAS(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    // Column-major views: C^T (n x m) = op(W or B) (n x k) op(A) (k x m); see GemmLayout.
    const bool tn = g_.layout == GemmLayout::kTN, nt = g_.layout == GemmLayout::kNT;
    const cublasOperation_t ta = tn ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = nt ? CUBLAS_OP_T : CUBLAS_OP_N;
    TS_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    TS_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (fp8 != nullptr && fp8->scales) {
      const void* sa = scale_w_.get();  // cuBLAS "A" is the weight W
      const void* sb = scale_a_.get();
      TS_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa,
                                               sizeof(sa)));
      TS_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb,
                                               sizeof(sb)));
    }
    if (fp8 != nullptr && fp8->split_accum) {
      const std::int8_t fast = 0;
      TS_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                               sizeof(fast)));
    }
    if (tn) {
      layout(&la_, in_type, k, n);  // W [n x k] row-major: k x n column-major, transposed
    } else {
      layout(&la_, in_type, n, k);  // B [k x n] row-major: n x k column-major
    }
    if (nt) {
      layout(&lb_, in_type, m, k);  // A [k x m] row-major: m x k column-major, transposed
    } else {
      layout(&lb_, in_type, k, m);  // A [m x k] row-major: k x m column-major
    }
    layout(&lc_, g_.accumulate ? CUDA_R_32F : CUDA_R_16BF, n, m);
  }

  // Sampled elements of C (the corners first): the offsets of their row of A and column of B
  // over all groups (see GemmLayout), and their index in C.
  void sample_elements(std::vector<std::int64_t>& rows, std::vector<std::int64_t>& cols,
                       std::vector<std::size_t>& at) const {
    const auto m = static_cast<std::size_t>(g_.m), n = static_cast<std::size_t>(g_.n),
               k = static_cast<std::size_t>(g_.k), groups = static_cast<std::size_t>(g_.groups);
    const bool nt = g_.layout == GemmLayout::kNT, tn = g_.layout == GemmLayout::kTN;
    std::mt19937_64 rng(42);
    for (std::size_t i = 0; i < at.size(); ++i) {
      std::size_t g = rng() % groups, r = rng() % m, c = rng() % n;
      if (i == 0) g = r = c = 0;
      if (i == 1) g = groups - 1, r = m - 1, c = n - 1;
      rows[i] = static_cast<std::int64_t>(g * m * k + (nt ? r : r * k));
      cols[i] = static_cast<std::int64_t>(g * n * k + (tn ? c * k : c));
      at[i] = (g * m + r) * n + c;
    }
  }

  std::size_t out_size() const { return g_.accumulate ? 4 : 2; }
  // Element i of C (FP32 when accumulating, else BF16), on the host.
  float output_at(std::size_t i) const {
    float v = 0;
    if (g_.accumulate) {
      copy_to_host_as_float(static_cast<const float*>(c_.get()) + i, 1, Elem::kF32, &v);
    } else {
      copy_to_host_as_float(static_cast<const __nv_bfloat16*>(c_.get()) + i, 1, Elem::kBF16, &v);
    }
    return v;
  }
  float beta_() const { return g_.accumulate ? 1.0f : 0.0f; }

  void release() {
    for (auto* l : {&la_, &lb_, &lc_}) {
      if (*l != nullptr) cublasLtMatrixLayoutDestroy(*l);
      *l = nullptr;
    }
    if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
    desc_ = nullptr;
  }

  // The first of cuBLASLt's heuristic algorithms that runs; false when none does.
  bool pick_algorithm() {
    constexpr int kAlgos = 8;
    cublasLtMatmulPreference_t pref = nullptr;
    TS_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const std::size_t ws = kWorkspaceBytes;
    TS_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &ws, sizeof(ws)));
    cublasLtMatmulHeuristicResult_t found[kAlgos] = {};
    int count = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, desc_, la_, lb_, lc_, lc_,
                                                             pref, kAlgos, found, &count);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) return false;
    const float alpha = 1.0f, beta = beta_();
    for (int i = 0; i < count; ++i) {
      const cublasStatus_t run = cublasLtMatmul(
          handle_, desc_, &alpha, w_[0].get(), la_, a_[0].get(), lb_, &beta, c_.get(), lc_,
          c_.get(), lc_, &found[i].algo, workspace_.get(), kWorkspaceBytes, ctx_.stream);
      if (run == CUBLAS_STATUS_SUCCESS && cudaStreamSynchronize(ctx_.stream) == cudaSuccess) {
        heuristic_ = found[i];
        algo_index_ = i;
        return true;
      }
    }
    return false;
  }

  void build(cudaDataType_t in_type) {
    if (!fp8_) {
      describe(in_type, nullptr);
      if (!pick_algorithm()) throw std::runtime_error("cuBLASLt has no algorithm that runs");
      source_ = "cublaslt algo " + std::to_string(algo_index_);
      return;
    }
    const float scales[2] = {kScaleA, kScaleB};
    scale_a_ = DeviceBuffer(256);
    scale_w_ = DeviceBuffer(256);
    TS_CUDA(cudaMemcpy(scale_a_.get(), &scales[0], sizeof(float), cudaMemcpyHostToDevice));
    TS_CUDA(cudaMemcpy(scale_w_.get(), &scales[1], sizeof(float), cudaMemcpyHostToDevice));
    static constexpr Fp8Setup kSetups[] = {
        {true, true, "per-tensor scales, split accumulation"},
        {true, false, "per-tensor scales, default accumulation"},
        {false, false, "unscaled, default accumulation"},
    };
    std::string tried;
    for (const auto& setup : kSetups) {
      describe(in_type, &setup);
      if (pick_algorithm()) {
        scaled_ = setup.scales;
        source_ =
            "cublaslt fp8 " + std::string(setup.what) + ", algo " + std::to_string(algo_index_);
        return;
      }
      tried += std::string(tried.empty() ? "" : "; ") + setup.what;
      release();
    }
    throw std::runtime_error("cuBLASLt runs no algorithm for " + shape_label(g_) + " (" + tried +
                             ")");
  }

  GemmShape g_;
  RunnerContext ctx_;
  cublasLtHandle_t handle_ = nullptr;
  bool fp8_ = false;
  Elem in_elem_ = Elem::kBF16;
  int sets_ = 1;
  std::vector<DeviceBuffer> a_, w_;
  DeviceBuffer c_, workspace_, scale_a_, scale_w_;
  bool scaled_ = false;
  int algo_index_ = 0;
  std::string source_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

void GemmRunner::check() {
  const auto m = static_cast<std::size_t>(g_.m), n = static_cast<std::size_t>(g_.n),
             groups = static_cast<std::size_t>(g_.groups);
  // An accumulating GEMM's C is an input: its sampled elements are read before the launch and
  // subtracted after it; a plain GEMM's C is poisoned, so that unwritten elements show.
  std::vector<float> before;
  if (!g_.accumulate) fill_poison(c_.get(), groups * m * n, Elem::kBF16, ctx_.stream);
  TS_CUDA(cudaStreamSynchronize(ctx_.stream));
  // 256 sampled elements of C (over all groups, the corners included) against fp32 dot
  // products of the same inputs.
  constexpr int kSamples = 256;
  std::vector<std::int64_t> rows(kSamples), cols(kSamples);
  std::vector<std::size_t> at(kSamples);
  sample_elements(rows, cols, at);
  if (g_.accumulate) {
    for (std::size_t i = 0; i < kSamples; ++i) before.push_back(output_at(at[i]));
  }
  launch(0);
  const auto astep = static_cast<std::int64_t>(g_.layout == GemmLayout::kNT ? m : 1);
  const auto bstep = static_cast<std::int64_t>(g_.layout == GemmLayout::kTN ? 1 : n);
  DeviceBuffer d_rows(kSamples * sizeof(std::int64_t)), d_cols(kSamples * sizeof(std::int64_t)),
      d_ref(kSamples * sizeof(float));
  TS_CUDA(cudaMemcpy(d_rows.get(), rows.data(), kSamples * sizeof(std::int64_t),
                     cudaMemcpyHostToDevice));
  TS_CUDA(cudaMemcpy(d_cols.get(), cols.data(), kSamples * sizeof(std::int64_t),
                     cudaMemcpyHostToDevice));
  const auto* r = static_cast<const std::int64_t*>(d_rows.get());
  const auto* c = static_cast<const std::int64_t*>(d_cols.get());
  if (fp8_) {
    reference_dots<<<kSamples, 256, 0, ctx_.stream>>>(
        static_cast<const __nv_fp8_e4m3*>(a_[0].get()),
        static_cast<const __nv_fp8_e4m3*>(w_[0].get()), g_.k, r, c, astep, bstep, kSamples,
        static_cast<float*>(d_ref.get()));
  } else {
    reference_dots<<<kSamples, 256, 0, ctx_.stream>>>(
        static_cast<const __nv_bfloat16*>(a_[0].get()),
        static_cast<const __nv_bfloat16*>(w_[0].get()), g_.k, r, c, astep, bstep, kSamples,
        static_cast<float*>(d_ref.get()));
  }
  TS_LAUNCHED();
  TS_CUDA(cudaStreamSynchronize(ctx_.stream));
  if (!g_.accumulate && count_nonfinite_bf16(c_.get(), groups * m * n, ctx_.stream) != 0) {
    throw std::runtime_error(shape_label(g_) + ": output not fully written (or not finite)");
  }
  std::vector<float> ref(kSamples);
  copy_to_host_as_float(d_ref.get(), kSamples, Elem::kF32, ref.data());
  const float scale = scaled_ ? kScaleA * kScaleB : 1.0f;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < kSamples; ++i) {
    const double got = output_at(at[i]) - (g_.accumulate ? before[i] : 0.0f);
    const double want = static_cast<double>(ref[i]) * scale;
    num += (got - want) * (got - want);
    den += want * want;
  }
  const double err = std::sqrt(num / den);
  if (!(err < 1e-2)) {  // BF16 output rounding; accumulation order
    throw std::runtime_error(shape_label(g_) + ": relative error " + std::to_string(err) +
                             " against the reference");
  }
}

}  // namespace

std::unique_ptr<KernelRunner> make_gemm_runner(const GemmShape& shape, const RunnerContext& c) {
  return std::make_unique<GemmRunner>(shape, c);
}

}  // namespace trainsim::kernels
