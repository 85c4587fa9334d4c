// Fused attention forward through cuDNN's SDPA, expressed as a cuDNN backend operation graph
// (the pattern the frontend library builds; the frontend itself is not a Debian package):
//   S = Q K^T * scale; causal mask (row >= col) when causal; softmax with stats (max + log sum,
//   kept for the backward pass); O = softmax(S) V. Layout BHSD, BF16 in and out, FP32 inside;
//   GQA by K and V having fewer heads. The backward pass is timed by kernels/torch/attention.py
//   (cuDNN's SDPA backward through PyTorch, which builds it with the frontend).
#include <cuda_bf16.h>
#include <cudnn.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/runner.hpp"
#include "kernels/host/stats.hpp"

#define TS_CUDNN(call)                                                                       \
  do {                                                                                       \
    const cudnnStatus_t ts_st_ = (call);                                                     \
    if (ts_st_ != CUDNN_STATUS_SUCCESS) {                                                    \
      ::trainsim::kernels::gpu_fail(#call, __FILE__, __LINE__, cudnnGetErrorString(ts_st_)); \
    }                                                                                        \
  } while (0)

namespace trainsim::kernels {

namespace {

using bf16 = __nv_bfloat16;

// A backend descriptor, destroyed with its owner.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) {
    TS_CUDNN(cudnnBackendCreateDescriptor(type, &d_));
  }
  ~Desc() {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  template <class T>
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values,
            std::int64_t count = 1) {
    TS_CUDNN(cudnnBackendSetAttribute(d_, name, type, count, values));
    return *this;
  }
  Desc& set_desc(cudnnBackendAttributeName_t name, const Desc& other) {
    cudnnBackendDescriptor_t o = other.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &o);
  }
  void finalize() { TS_CUDNN(cudnnBackendFinalize(d_)); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kStats, kScale, kNegInf, kFirstVirtual = 100 };

class AttentionRunner final : public KernelRunner {
 public:
  AttentionRunner(const AttentionShape& a, const RunnerContext& ctx) : a_(a), ctx_(ctx) {
    const auto b = static_cast<std::size_t>(a.batch), h = static_cast<std::size_t>(a.heads),
               hk = static_cast<std::size_t>(a.kv_heads), s = static_cast<std::size_t>(a.seq),
               d = static_cast<std::size_t>(a.head_dim);
    q_elems_ = b * h * s * d;
    kv_elems_ = b * hk * s * d;
    const double set_bytes = static_cast<double>((q_elems_ + 2 * kv_elems_) * 2);
    sets_ = rotating_sets(set_bytes, ctx.l2_bytes, ctx.budget_bytes);
    for (int i = 0; i < sets_; ++i) {
      q_.emplace_back(q_elems_ * 2);
      k_.emplace_back(kv_elems_ * 2);
      v_.emplace_back(kv_elems_ * 2);
      const auto seed = 3 * static_cast<std::uint64_t>(i);
      fill_random(q_.back().get(), q_elems_, Elem::kBF16, seed + 1, 1.0f);
      fill_random(k_.back().get(), kv_elems_, Elem::kBF16, seed + 2, 1.0f);
      fill_random(v_.back().get(), kv_elems_, Elem::kBF16, seed + 3, 1.0f);
    }
    o_ = DeviceBuffer(q_elems_ * 2);
    stats_ = DeviceBuffer(b * h * s * sizeof(float));
    scale_ = 1.0f / std::sqrt(static_cast<float>(d));
    build_plan();
    for (int i = 0; i < sets_; ++i) packs_.push_back(variant_pack(static_cast<std::size_t>(i)));
    TS_CUDA(cudaStreamSynchronize(ctx.stream));
  }

  int sets() const override { return sets_; }

  void launch(int iteration) override {
    const auto i = static_cast<std::size_t>(iteration % sets_);
    TS_CUDNN(cudnnSetStream(handle(), ctx_.stream));
    TS_CUDNN(cudnnBackendExecute(handle(), plan_->get(), packs_[i]->get()));
  }

  std::string source() const override { return "cudnn-graph"; }

  void check() override;

 private:
  cudnnHandle_t handle() const { return static_cast<cudnnHandle_t>(ctx_.cudnn); }

  // The device pointers of input set i (built once: a launch only executes).
  std::unique_ptr<Desc> variant_pack(std::size_t i) {
    const std::int64_t uids[] = {kQ, kK, kV, kO, kStats, kScale, kNegInf};
    void* ptrs[] = {q_[i].get(),  k_[i].get(), v_[i].get(), o_.get(),
                    stats_.get(), &scale_,     &neg_inf_};
    const std::int64_t count = a_.causal ? 7 : 6;  // the mask's -inf only where there is a mask
    auto pack = std::make_unique<Desc>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    void* ws = workspace_.get();
    pack->set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids, count)
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ptrs, count)
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &ws);
    pack->finalize();
    return pack;
  }

  Desc& keep(cudnnBackendDescriptorType_t type) {
    kept_.push_back(std::make_unique<Desc>(type));
    return *kept_.back();
  }

  Desc& tensor(std::int64_t uid, cudnnDataType_t type, std::vector<std::int64_t> dims,
               std::vector<std::int64_t> strides, bool is_virtual, bool by_value = false) {
    Desc& t = keep(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const std::int64_t align = 16;
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type)
        .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(),
             static_cast<std::int64_t>(dims.size()))
        .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(),
             static_cast<std::int64_t>(strides.size()))
        .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid)
        .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &align)
        .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &is_virtual);
    if (by_value) t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &by_value);
    t.finalize();
    return t;
  }

  Desc& pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t prec, const Desc& x, const Desc* b,
                  const Desc& y, const Desc* t = nullptr, std::int64_t axis = -1) {
    Desc& pw = keep(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode)
        .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &prec);
    if (axis >= 0) pw.set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, &axis);
    pw.finalize();
    Desc& op = keep(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw)
        .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x)
        .set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    if (b != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
    if (t != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t);
    op.finalize();
    ops_.push_back(op.get());
    return op;
  }

  void matmul(const Desc& a, const Desc& b, const Desc& c) {
    Desc& mm = keep(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    mm.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &f32).finalize();
    Desc& op = keep(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, mm)
        .finalize();
    ops_.push_back(op.get());
  }

  void reduction(cudnnReduceTensorOp_t kind, const Desc& x, const Desc& y) {
    Desc& r = keep(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &kind)
        .set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &f32)
        .finalize();
    Desc& op = keep(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r)
        .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
        .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
        .finalize();
    ops_.push_back(op.get());
  }

  void build_plan() {
    const std::int64_t b = a_.batch, h = a_.heads, hk = a_.kv_heads, s = a_.seq, d = a_.head_dim;
    const auto BF = CUDNN_DATA_BFLOAT16, F = CUDNN_DATA_FLOAT;
    std::int64_t uid = kFirstVirtual;
    const Desc& q = tensor(kQ, BF, {b, h, s, d}, {h * s * d, s * d, d, 1}, false);
    const Desc& k = tensor(kK, BF, {b, hk, d, s}, {hk * s * d, s * d, 1, d}, false);  // K^T view
    const Desc& v = tensor(kV, BF, {b, hk, s, d}, {hk * s * d, s * d, d, 1}, false);
    const Desc& o = tensor(kO, BF, {b, h, s, d}, {h * s * d, s * d, d, 1}, false);
    const Desc& stats = tensor(kStats, F, {b, h, s, 1}, {h * s, s, 1, 1}, false);
    const Desc& scale = tensor(kScale, F, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
    const Desc& neg_inf = tensor(kNegInf, F, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
    const std::vector<std::int64_t> sd = {b, h, s, s}, ss = {h * s * s, s * s, s, 1};
    const std::vector<std::int64_t> rd = {b, h, s, 1}, rs = {h * s, s, 1, 1};
    auto virt = [&](cudnnDataType_t t, const std::vector<std::int64_t>& dims,
                    const std::vector<std::int64_t>& strides) -> const Desc& {
      return tensor(uid++, t, dims, strides, true);
    };
    const Desc& scores = virt(F, sd, ss);
    matmul(q, k, scores);
    const Desc& scaled = virt(F, sd, ss);
    pointwise(CUDNN_POINTWISE_MUL, F, scores, &scale, scaled);
    const Desc* masked = &scaled;
    if (a_.causal) {
      const Desc& row = virt(CUDNN_DATA_INT32, sd, ss);
      pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, scaled, nullptr, row, nullptr, 2);
      const Desc& col = virt(CUDNN_DATA_INT32, sd, ss);
      pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32, scaled, nullptr, col, nullptr, 3);
      const Desc& keep_mask = virt(CUDNN_DATA_BOOLEAN, sd, ss);
      pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_INT32, row, &col, keep_mask);
      masked = &virt(F, sd, ss);
      pointwise(CUDNN_POINTWISE_BINARY_SELECT, F, scaled, &neg_inf, *masked, &keep_mask);
    }
    const Desc& row_max = virt(F, rd, rs);
    reduction(CUDNN_REDUCE_TENSOR_MAX, *masked, row_max);
    const Desc& shifted = virt(F, sd, ss);
    pointwise(CUDNN_POINTWISE_SUB, F, *masked, &row_max, shifted);
    const Desc& e = virt(F, sd, ss);
    pointwise(CUDNN_POINTWISE_EXP, F, shifted, nullptr, e);
    const Desc& row_sum = virt(F, rd, rs);
    reduction(CUDNN_REDUCE_TENSOR_ADD, e, row_sum);
    const Desc& log_sum = virt(F, rd, rs);
    pointwise(CUDNN_POINTWISE_LOG, F, row_sum, nullptr, log_sum);
    pointwise(CUDNN_POINTWISE_ADD, F, row_max, &log_sum, stats);
    const Desc& p = virt(BF, sd, ss);
    pointwise(CUDNN_POINTWISE_DIV, F, e, &row_sum, p);
    matmul(p, v, o);

    Desc& graph = keep(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    cudnnHandle_t hd = handle();
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &hd)
        .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops_.data(),
             static_cast<std::int64_t>(ops_.size()))
        .finalize();
    Desc& heur = keep(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode)
        .finalize();
    constexpr int kConfigs = 8;
    std::vector<std::unique_ptr<Desc>> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int i = 0; i < kConfigs; ++i) {
      configs.push_back(std::make_unique<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      raw.push_back(configs.back()->get());
    }
    std::int64_t found = 0;
    TS_CUDNN(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, kConfigs, &found, raw.data()));
    // The first configuration cuDNN can build a plan for.
    for (std::int64_t i = 0; i < found; ++i) {
      auto plan = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &hd)
          .set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *configs[static_cast<std::size_t>(i)]);
      if (cudnnBackendFinalize(plan->get()) != CUDNN_STATUS_SUCCESS) continue;
      std::int64_t ws = 0, n = 0;
      TS_CUDNN(cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                        CUDNN_TYPE_INT64, 1, &n, &ws));
      workspace_ = DeviceBuffer(static_cast<std::size_t>(ws));
      plan_ = std::move(plan);
      for (auto& c : configs) kept_.push_back(std::move(c));
      return;
    }
    throw std::runtime_error("cuDNN has no engine for the SDPA graph of " + shape_label(a_));
  }

  AttentionShape a_;
  RunnerContext ctx_;
  std::size_t q_elems_ = 0, kv_elems_ = 0;
  int sets_ = 1;
  std::vector<DeviceBuffer> q_, k_, v_;
  DeviceBuffer o_, stats_, workspace_;
  float scale_ = 1;
  float neg_inf_ = std::numeric_limits<float>::lowest();
  std::vector<std::unique_ptr<Desc>> kept_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  std::unique_ptr<Desc> plan_;
  std::vector<std::unique_ptr<Desc>> packs_;
};

// Reference: one block per (batch, head, query row), FP32, causal or not, GQA head i -> i / group.
__global__ void reference_attention(const bf16* q, const bf16* k, const bf16* v, float* o,
                                    int heads, int kv_heads, int seq, int dim, float scale,
                                    bool causal) {
  extern __shared__ float p[];  // seq scores
  const int row = static_cast<int>(blockIdx.x) % seq;
  const int head = (static_cast<int>(blockIdx.x) / seq) % heads;
  const int batch = static_cast<int>(blockIdx.x) / (seq * heads);
  const int kv = head / (heads / kv_heads);
  const bf16* qr = q + ((static_cast<std::size_t>(batch) * heads + head) * seq + row) * dim;
  const bf16* kb = k + (static_cast<std::size_t>(batch) * kv_heads + kv) * seq * dim;
  const bf16* vb = v + (static_cast<std::size_t>(batch) * kv_heads + kv) * seq * dim;
  const int last = causal ? row : seq - 1;  // the last key this query attends to
  for (int j = static_cast<int>(threadIdx.x); j < seq; j += static_cast<int>(blockDim.x)) {
    float acc = 0;
    for (int c = 0; c < dim; ++c)
      acc += __bfloat162float(qr[c]) * __bfloat162float(kb[j * dim + c]);
    p[j] = j <= last ? acc * scale : -INFINITY;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = -INFINITY, s = 0;
    for (int j = 0; j <= last; ++j) m = fmaxf(m, p[j]);
    for (int j = 0; j < seq; ++j) {
      p[j] = j <= last ? expf(p[j] - m) : 0.0f;
      s += p[j];
    }
    for (int j = 0; j < seq; ++j) p[j] /= s;
  }
  __syncthreads();
  float* orow = o + ((static_cast<std::size_t>(batch) * heads + head) * seq + row) * dim;
  for (int c = static_cast<int>(threadIdx.x); c < dim; c += static_cast<int>(blockDim.x)) {
    float acc = 0;
    for (int j = 0; j <= last; ++j) acc += p[j] * __bfloat162float(vb[j * dim + c]);
    orow[c] = acc;
  }
}

void AttentionRunner::check() {
  // The same graph on a small shape of this head size and GQA ratio, against the reference.
  AttentionShape small = a_;
  small.batch = 1;
  small.seq = 256;
  small.kv_heads = 2;
  small.heads = 2 * (a_.heads / a_.kv_heads);
  AttentionRunner r(small, ctx_);
  const std::size_t n = r.q_elems_;
  fill_poison(r.o_.get(), n, Elem::kBF16, ctx_.stream);
  r.launch(0);
  DeviceBuffer ref(n * sizeof(float));
  reference_attention<<<static_cast<unsigned>(small.heads * small.seq), 128,
                        static_cast<std::size_t>(small.seq) * sizeof(float), ctx_.stream>>>(
      static_cast<const bf16*>(r.q_[0].get()), static_cast<const bf16*>(r.k_[0].get()),
      static_cast<const bf16*>(r.v_[0].get()), static_cast<float*>(ref.get()),
      static_cast<int>(small.heads), static_cast<int>(small.kv_heads), static_cast<int>(small.seq),
      static_cast<int>(small.head_dim), r.scale_, small.causal);
  TS_LAUNCHED();
  TS_CUDA(cudaStreamSynchronize(ctx_.stream));
  std::vector<float> got(n), want(n);
  copy_to_host_as_float(r.o_.get(), n, Elem::kBF16, got.data());
  copy_to_host_as_float(ref.get(), n, Elem::kF32, want.data());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i]))
      throw std::runtime_error(shape_label(small) + ": output not written");
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  const double err = std::sqrt(num / den);
  if (!(err < 2e-2)) {
    throw std::runtime_error(shape_label(small) + ": relative error " + std::to_string(err) +
                             " against the reference");
  }
}

}  // namespace

std::unique_ptr<KernelRunner> make_attention_runner(const AttentionShape& shape,
                                                    const RunnerContext& c) {
  if (shape.pass != AttentionPass::kForward) return nullptr;
  return std::make_unique<AttentionRunner>(shape, c);
}

}  // namespace trainsim::kernels
