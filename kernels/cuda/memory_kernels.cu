// The memory-bound kernels of a training step, written here because no library provides them
// as such: residual add, RMSNorm and LayerNorm, the MLP activations (gated and not), RoPE, the
// embedding gather and its scatter-add, softmax cross-entropy, the gradient norm and the fused
// Adam step, each forward and backward; and the device-to-device copy (cudaMemcpyAsync), the
// bandwidth ceiling. Bytes moved per element match memory_ops() in sim/platform/kernel_shape.
#include <cuda_bf16.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/memory_common.cuh"
#include "kernels/cuda/routing_kernels.cuh"
#include "kernels/cuda/runner.hpp"
#include "kernels/host/routing_reference.hpp"
#include "kernels/host/stats.hpp"

namespace trainsim::kernels {

namespace {

// Activations: value and derivative. Gelu is the tanh approximation.
enum class Act { kSilu, kGelu, kRelu, kSquaredRelu };

__host__ __device__ inline float act(Act a, float x) {
  switch (a) {
    case Act::kSilu:
      return x / (1.0f + expf(-x));
    case Act::kGelu: {
      const float u = 0.7978845608f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + tanhf(u));
    }
    case Act::kRelu:
      return x > 0 ? x : 0.0f;
    case Act::kSquaredRelu:
      return x > 0 ? x * x : 0.0f;
  }
  return 0;
}

__host__ __device__ inline float act_grad(Act a, float x) {
  switch (a) {
    case Act::kSilu: {
      const float s = 1.0f / (1.0f + expf(-x));
      return s * (1.0f + x * (1.0f - s));
    }
    case Act::kGelu: {
      const float u = 0.7978845608f * (x + 0.044715f * x * x * x);
      const float t = tanhf(u);
      return 0.5f * (1.0f + t) +
             0.5f * x * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
    }
    case Act::kRelu:
      return x > 0 ? 1.0f : 0.0f;
    case Act::kSquaredRelu:
      return x > 0 ? 2.0f * x : 0.0f;
  }
  return 0;
}

std::size_t grid(std::size_t work) {
  const std::size_t b = (work + kThreads - 1) / kThreads;
  return b == 0 ? 1 : (b > 65536 ? 65536 : b);
}

#define TS_GRID_STRIDE(i, n)                                                                     \
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)

// ---------------------------------------------------------------- elementwise (8 wide)

__global__ void add_kernel(const bf16* a, const bf16* b, bf16* out, std::size_t n8) {
  TS_GRID_STRIDE(i, n8) {
    float x[8], y[8];
    load8(a + 8 * i, x);
    load8(b + 8 * i, y);
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] += y[j];
    store8(out + 8 * i, x);
  }
}

// nanotron's cast of the logits to fp32 before the loss, and its gradient back to BF16.
__global__ void cast_up_kernel(const bf16* x, float* y, std::size_t n8) {
  TS_GRID_STRIDE(i, n8) {
    float v[8];
    load8(x + 8 * i, v);
    reinterpret_cast<float4*>(y + 8 * i)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(y + 8 * i)[1] = make_float4(v[4], v[5], v[6], v[7]);
  }
}

__global__ void cast_down_kernel(const float* x, bf16* y, std::size_t n8) {
  TS_GRID_STRIDE(i, n8) {
    const float4 lo = reinterpret_cast<const float4*>(x + 8 * i)[0];
    const float4 hi = reinterpret_cast<const float4*>(x + 8 * i)[1];
    const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    store8(y + 8 * i, v);
  }
}

__global__ void act_fwd_kernel(Act a, const bf16* x, bf16* y, std::size_t n8) {
  TS_GRID_STRIDE(i, n8) {
    float v[8];
    load8(x + 8 * i, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = act(a, v[j]);
    store8(y + 8 * i, v);
  }
}

__global__ void act_bwd_kernel(Act a, const bf16* x, const bf16* dy, bf16* dx, std::size_t n8) {
  TS_GRID_STRIDE(i, n8) {
    float v[8], g[8];
    load8(x + 8 * i, v);
    load8(dy + 8 * i, g);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = g[j] * act_grad(a, v[j]);
    store8(dx + 8 * i, v);
  }
}

// Gated MLP: each input row holds [gate (cols) | up (cols)]; out = act(gate) * up.
__global__ void gated_fwd_kernel(Act a, const bf16* in, bf16* out, std::size_t rows,
                                 std::size_t cols) {
  const std::size_t per_row = cols / 8;
  TS_GRID_STRIDE(i, rows * per_row) {
    const std::size_t r = i / per_row, c = 8 * (i % per_row);
    float g[8], u[8];
    load8(in + r * 2 * cols + c, g);
    load8(in + r * 2 * cols + cols + c, u);
#pragma unroll
    for (int j = 0; j < 8; ++j) g[j] = act(a, g[j]) * u[j];
    store8(out + r * cols + c, g);
  }
}

__global__ void gated_bwd_kernel(Act a, const bf16* dout, const bf16* in, bf16* din,
                                 std::size_t rows, std::size_t cols) {
  const std::size_t per_row = cols / 8;
  TS_GRID_STRIDE(i, rows * per_row) {
    const std::size_t r = i / per_row, c = 8 * (i % per_row);
    float d[8], g[8], u[8], dg[8], du[8];
    load8(dout + r * cols + c, d);
    load8(in + r * 2 * cols + c, g);
    load8(in + r * 2 * cols + cols + c, u);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      dg[j] = d[j] * u[j] * act_grad(a, g[j]);
      du[j] = d[j] * act(a, g[j]);
    }
    store8(din + r * 2 * cols + c, dg);
    store8(din + r * 2 * cols + cols + c, du);
  }
}

// Rotary embedding on interleaved pairs (x[2j], x[2j+1]) of each row (one token); the angle of
// pair j at position p is p * 10000^(-2 (j mod 64) / 128). The gradient rotates back.
__host__ __device__ inline float rope_angle(std::size_t pos, std::size_t pair) {
  return static_cast<float>(pos) * powf(10000.0f, -2.0f * static_cast<float>(pair % 64) / 128.0f);
}

__global__ void rope_kernel(const bf16* in, bf16* out, std::size_t rows, std::size_t cols,
                            float sign) {
  const std::size_t per_row = cols / 8;
  TS_GRID_STRIDE(i, rows * per_row) {
    const std::size_t r = i / per_row, c = 8 * (i % per_row);
    float v[8], o[8];
    load8(in + r * cols + c, v);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float s, co;
      sincosf(sign * rope_angle(r, c / 2 + j), &s, &co);
      o[2 * j] = v[2 * j] * co - v[2 * j + 1] * s;
      o[2 * j + 1] = v[2 * j] * s + v[2 * j + 1] * co;
    }
    store8(out + r * cols + c, o);
  }
}

// ---------------------------------------------------------------- rows (one block per row)

constexpr float kEps = 1e-5f;

__global__ void rmsnorm_fwd_kernel(const bf16* x, const bf16* w, bf16* y, std::size_t cols) {
  const bf16* xr = x + blockIdx.x * cols;
  float ss = 0;
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8];
    load8(xr + c, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) ss += v[j] * v[j];
  }
  const float r = rsqrtf(block_sum(ss) / static_cast<float>(cols) + kEps);
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8], g[8];
    load8(xr + c, v);
    load8(w + c, g);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] *= r * g[j];
    store8(y + blockIdx.x * cols + c, v);
  }
}

__global__ void rmsnorm_bwd_kernel(const bf16* x, const bf16* w, const bf16* dy, bf16* dx,
                                   std::size_t cols) {
  const bf16* xr = x + blockIdx.x * cols;
  const bf16* dyr = dy + blockIdx.x * cols;
  float ss = 0, dot = 0;
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8], g[8], d[8];
    load8(xr + c, v);
    load8(w + c, g);
    load8(dyr + c, d);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      ss += v[j] * v[j];
      dot += v[j] * g[j] * d[j];
    }
  }
  const float n = static_cast<float>(cols);
  const float r = rsqrtf(block_sum(ss) / n + kEps);
  const float k = block_sum(dot) * r * r * r / n;
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8], g[8], d[8];
    load8(xr + c, v);
    load8(w + c, g);
    load8(dyr + c, d);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = r * g[j] * d[j] - k * v[j];
    store8(dx + blockIdx.x * cols + c, v);
  }
}

__global__ void layernorm_fwd_kernel(const bf16* x, const bf16* w, const bf16* b, bf16* y,
                                     std::size_t cols) {
  const bf16* xr = x + blockIdx.x * cols;
  float s = 0, ss = 0;
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8];
    load8(xr + c, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      s += v[j];
      ss += v[j] * v[j];
    }
  }
  const float n = static_cast<float>(cols);
  const float mean = block_sum(s) / n;
  const float rstd = rsqrtf(fmaxf(block_sum(ss) / n - mean * mean, 0.0f) + kEps);
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8], g[8], o[8];
    load8(xr + c, v);
    load8(w + c, g);
    load8(b + c, o);
#pragma unroll
    for (int j = 0; j < 8; ++j) o[j] += (v[j] - mean) * rstd * g[j];
    store8(y + blockIdx.x * cols + c, o);
  }
}

__global__ void layernorm_bwd_kernel(const bf16* x, const bf16* w, const bf16* dy, bf16* dx,
                                     std::size_t cols) {
  const bf16* xr = x + blockIdx.x * cols;
  const bf16* dyr = dy + blockIdx.x * cols;
  float s = 0, ss = 0;
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8];
    load8(xr + c, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      s += v[j];
      ss += v[j] * v[j];
    }
  }
  const float n = static_cast<float>(cols);
  const float mean = block_sum(s) / n;
  const float rstd = rsqrtf(fmaxf(block_sum(ss) / n - mean * mean, 0.0f) + kEps);
  float sg = 0, sgx = 0;
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8], g[8], d[8];
    load8(xr + c, v);
    load8(w + c, g);
    load8(dyr + c, d);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float gj = g[j] * d[j];
      sg += gj;
      sgx += gj * (v[j] - mean) * rstd;
    }
  }
  const float mg = block_sum(sg) / n, mgx = block_sum(sgx) / n;
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8], g[8], d[8];
    load8(xr + c, v);
    load8(w + c, g);
    load8(dyr + c, d);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = rstd * (g[j] * d[j] - mg - (v[j] - mean) * rstd * mgx);
    store8(dx + blockIdx.x * cols + c, v);
  }
}

// Softmax cross-entropy over a row of logits: an online max and sum in one pass, the fp32
// softmax written in a second; loss = log(sum) + max - logit[target].
__global__ void xent_fwd_kernel(const bf16* logits, const int* target, float* softmax, float* loss,
                                std::size_t cols) {
  const bf16* xr = logits + blockIdx.x * cols;
  float m = -INFINITY, s = 0;
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8];
    load8(xr + c, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (v[j] > m) {
        s = s * expf(m - v[j]) + 1.0f;
        m = v[j];
      } else {
        s += expf(v[j] - m);
      }
    }
  }
  const float row_max = block_max(m);
  const float sum = block_sum(m == -INFINITY ? 0.0f : s * expf(m - row_max));
  const float inv = 1.0f / sum;
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8];
    load8(xr + c, v);
    float4 lo, hi;
    lo.x = expf(v[0] - row_max) * inv;
    lo.y = expf(v[1] - row_max) * inv;
    lo.z = expf(v[2] - row_max) * inv;
    lo.w = expf(v[3] - row_max) * inv;
    hi.x = expf(v[4] - row_max) * inv;
    hi.y = expf(v[5] - row_max) * inv;
    hi.z = expf(v[6] - row_max) * inv;
    hi.w = expf(v[7] - row_max) * inv;
    float4* out = reinterpret_cast<float4*>(softmax + blockIdx.x * cols + c);
    out[0] = lo;
    out[1] = hi;
  }
  if (threadIdx.x == 0) {
    loss[blockIdx.x] = logf(sum) + row_max - __bfloat162float(xr[target[blockIdx.x]]);
  }
}

__global__ void xent_bwd_kernel(const float* softmax, const int* target, bf16* dlogits,
                                std::size_t rows, std::size_t cols) {
  const std::size_t per_row = cols / 8;
  TS_GRID_STRIDE(i, rows * per_row) {
    const std::size_t r = i / per_row, c = 8 * (i % per_row);
    const float4* in = reinterpret_cast<const float4*>(softmax + r * cols + c);
    const float4 lo = in[0], hi = in[1];
    float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const std::size_t t = static_cast<std::size_t>(target[r]);
    if (t >= c && t < c + 8) v[t - c] -= 1.0f;
    store8(dlogits + r * cols + c, v);
  }
}

__global__ void embedding_fwd_kernel(const bf16* table, const int* ids, bf16* out, std::size_t rows,
                                     std::size_t cols) {
  const std::size_t per_row = cols / 8;
  TS_GRID_STRIDE(i, rows * per_row) {
    const std::size_t r = i / per_row, c = 8 * (i % per_row);
    *reinterpret_cast<Pack8*>(out + r * cols + c) =
        *reinterpret_cast<const Pack8*>(table + static_cast<std::size_t>(ids[r]) * cols + c);
  }
}

__global__ void embedding_bwd_kernel(const bf16* dy, const int* ids, float* grad, std::size_t rows,
                                     std::size_t cols) {
  const std::size_t per_row = cols / 8;
  TS_GRID_STRIDE(i, rows * per_row) {
    const std::size_t r = i / per_row, c = 8 * (i % per_row);
    float d[8];
    load8(dy + r * cols + c, d);
    float* g = grad + static_cast<std::size_t>(ids[r]) * cols + c;
#pragma unroll
    for (int j = 0; j < 8; ++j) atomicAdd(g + j, d[j]);
  }
}

// ---------------------------------------------------------------- optimizer (fp32, 4 wide)

__global__ void grad_norm_kernel(const float* g, float* partial, std::size_t n4) {
  float s = 0;
  TS_GRID_STRIDE(i, n4) {
    const float4 v = reinterpret_cast<const float4*>(g)[i];
    s += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

struct AdamParams {
  float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
  float bias1 = 1.0f - 0.3486784401f;  // 1 - beta1^10 (step 10)
  float bias2 = 1.0f - 0.5987369392f;  // 1 - beta2^10
};

__host__ __device__ inline void adam_update(const AdamParams& a, float g, float& p, float& m,
                                            float& v) {
  m = a.beta1 * m + (1.0f - a.beta1) * g;
  v = a.beta2 * v + (1.0f - a.beta2) * g * g;
  const float mh = m / a.bias1, vh = v / a.bias2;
  p -= a.lr * (mh / (sqrtf(vh) + a.eps) + a.weight_decay * p);
}

__global__ void adam_kernel(AdamParams a, const float* g, float* p, float* m, float* v, bf16* w,
                            std::size_t n4) {
  TS_GRID_STRIDE(i, n4) {
    const float4 gi = reinterpret_cast<const float4*>(g)[i];
    float4 pi = reinterpret_cast<float4*>(p)[i];
    float4 mi = reinterpret_cast<float4*>(m)[i];
    float4 vi = reinterpret_cast<float4*>(v)[i];
    adam_update(a, gi.x, pi.x, mi.x, vi.x);
    adam_update(a, gi.y, pi.y, mi.y, vi.y);
    adam_update(a, gi.z, pi.z, mi.z, vi.z);
    adam_update(a, gi.w, pi.w, mi.w, vi.w);
    reinterpret_cast<float4*>(p)[i] = pi;
    reinterpret_cast<float4*>(m)[i] = mi;
    reinterpret_cast<float4*>(v)[i] = vi;
    __nv_bfloat162 lo = __floats2bfloat162_rn(pi.x, pi.y), hi = __floats2bfloat162_rn(pi.z, pi.w);
    reinterpret_cast<__nv_bfloat162*>(w)[2 * i] = lo;
    reinterpret_cast<__nv_bfloat162*>(w)[2 * i + 1] = hi;
  }
}

// ---------------------------------------------------------------- the ops' tensors

constexpr std::size_t kGradNormBlocks = 1024;

// Rows of the embedding table: at least as many as the tokens, capped at 2^31 bytes (BF16).
std::size_t table_rows(std::size_t rows, std::size_t cols) {
  const std::size_t cap = (std::size_t{1} << 30) / cols;
  return std::max<std::size_t>(std::min<std::size_t>(std::max<std::size_t>(rows, 32768), cap), 1);
}

Act act_of(const std::string& op) {
  if (op.rfind("swiglu", 0) == 0) return Act::kSilu;
  if (op.rfind("geglu", 0) == 0 || op.rfind("gelu", 0) == 0) return Act::kGelu;
  if (op.rfind("squared_relu", 0) == 0) return Act::kSquaredRelu;
  return Act::kRelu;
}

bool gated(const std::string& op) {
  return op.rfind("swiglu", 0) == 0 || op.rfind("geglu", 0) == 0;
}

bool is_grad(const std::string& op) {
  return op.size() > 5 && op.compare(op.size() - 5, 5, ".grad") == 0;
}

std::vector<TensorSpec> tensors_of(const std::string& op, std::size_t R, std::size_t C) {
  const std::size_t N = R * C;
  const Elem B = Elem::kBF16, F = Elem::kF32, I = Elem::kI32;
  if (op == "copy") return {{B, N, Role::kIn}, {B, N, Role::kOut}};
  if (op == "cast") return {{B, N, Role::kIn}, {F, N, Role::kOut}};
  if (op == "cast.grad") return {{F, N, Role::kIn}, {B, N, Role::kOut}};
  if (op == "add") return {{B, N, Role::kIn}, {B, N, Role::kIn}, {B, N, Role::kOut}};
  if (op == "rmsnorm") return {{B, N, Role::kIn}, {B, C, Role::kIn}, {B, N, Role::kOut}};
  if (op == "rmsnorm.grad" || op == "layernorm.grad") {
    return {{B, N, Role::kIn}, {B, C, Role::kIn}, {B, N, Role::kIn}, {B, N, Role::kOut}};
  }
  if (op == "layernorm") {
    return {{B, N, Role::kIn}, {B, C, Role::kIn}, {B, C, Role::kIn}, {B, N, Role::kOut}};
  }
  if (op == "rope" || op == "rope.grad") return {{B, N, Role::kIn}, {B, N, Role::kOut}};
  if (gated(op)) {
    if (is_grad(op)) return {{B, N, Role::kIn}, {B, 2 * N, Role::kIn}, {B, 2 * N, Role::kOut}};
    return {{B, 2 * N, Role::kIn}, {B, N, Role::kOut}};
  }
  if (op == "gelu" || op == "relu" || op == "squared_relu") {
    return {{B, N, Role::kIn}, {B, N, Role::kOut}};
  }
  if (op == "gelu.grad" || op == "relu.grad" || op == "squared_relu.grad") {
    return {{B, N, Role::kIn}, {B, N, Role::kIn}, {B, N, Role::kOut}};
  }
  const auto vt = static_cast<std::int32_t>(table_rows(R, C));
  if (op == "embedding")
    return {{B, table_rows(R, C) * C, Role::kIn}, {I, R, Role::kIn, 1, vt}, {B, N, Role::kOut}};
  if (op == "embedding.grad") {
    return {{B, N, Role::kIn}, {I, R, Role::kIn, 1, vt}, {F, table_rows(R, C) * C, Role::kInOut}};
  }
  const auto cols = static_cast<std::int32_t>(C);
  if (op == "cross_entropy") {
    return {{B, N, Role::kIn, 4.0f},
            {I, R, Role::kIn, 1, cols},
            {F, N, Role::kOut},
            {F, R, Role::kOut}};
  }
  if (op == "cross_entropy.grad")
    return {{F, N, Role::kIn}, {I, R, Role::kIn, 1, cols}, {B, N, Role::kOut}};
  if (op == "grad_norm") return {{F, N, Role::kIn}, {F, kGradNormBlocks, Role::kOut}};
  if (op == "adam") {
    return {{F, N, Role::kIn, 1e-2f},
            {F, N, Role::kInOut},
            {F, N, Role::kInOut, 1e-2f},
            {F, N, Role::kInOut, 1e-4f, 1, true},
            {B, N, Role::kOut}};
  }
  return routing_tensors(op, R, C);
}

void launch_op(const std::string& op, std::size_t R, std::size_t C, void* const* t,
               cudaStream_t s) {
  const std::size_t N = R * C;
  auto b = [&](int i) { return static_cast<bf16*>(t[i]); };
  auto f = [&](int i) { return static_cast<float*>(t[i]); };
  auto n = [&](int i) { return static_cast<int*>(t[i]); };
  const auto rows = static_cast<unsigned>(R);
  if (op == "copy") {
    TS_CUDA(cudaMemcpyAsync(t[1], t[0], N * 2, cudaMemcpyDeviceToDevice, s));
    return;
  }
  if (op == "add") {
    add_kernel<<<grid(N / 8), kThreads, 0, s>>>(b(0), b(1), b(2), N / 8);
  } else if (op == "cast") {
    cast_up_kernel<<<grid(N / 8), kThreads, 0, s>>>(b(0), f(1), N / 8);
  } else if (op == "cast.grad") {
    cast_down_kernel<<<grid(N / 8), kThreads, 0, s>>>(f(0), b(1), N / 8);
  } else if (op == "rmsnorm") {
    rmsnorm_fwd_kernel<<<rows, kThreads, 0, s>>>(b(0), b(1), b(2), C);
  } else if (op == "rmsnorm.grad") {
    rmsnorm_bwd_kernel<<<rows, kThreads, 0, s>>>(b(0), b(1), b(2), b(3), C);
  } else if (op == "layernorm") {
    layernorm_fwd_kernel<<<rows, kThreads, 0, s>>>(b(0), b(1), b(2), b(3), C);
  } else if (op == "layernorm.grad") {
    layernorm_bwd_kernel<<<rows, kThreads, 0, s>>>(b(0), b(1), b(2), b(3), C);
  } else if (op == "rope" || op == "rope.grad") {
    rope_kernel<<<grid(N / 8), kThreads, 0, s>>>(b(0), b(1), R, C, op == "rope" ? 1.0f : -1.0f);
  } else if (gated(op) && !is_grad(op)) {
    gated_fwd_kernel<<<grid(N / 8), kThreads, 0, s>>>(act_of(op), b(0), b(1), R, C);
  } else if (gated(op)) {
    gated_bwd_kernel<<<grid(N / 8), kThreads, 0, s>>>(act_of(op), b(0), b(1), b(2), R, C);
  } else if (op == "gelu" || op == "relu" || op == "squared_relu") {
    act_fwd_kernel<<<grid(N / 8), kThreads, 0, s>>>(act_of(op), b(0), b(1), N / 8);
  } else if (op == "gelu.grad" || op == "relu.grad" || op == "squared_relu.grad") {
    act_bwd_kernel<<<grid(N / 8), kThreads, 0, s>>>(act_of(op), b(0), b(1), b(2), N / 8);
  } else if (op == "embedding") {
    embedding_fwd_kernel<<<grid(N / 8), kThreads, 0, s>>>(b(0), n(1), b(2), R, C);
  } else if (op == "embedding.grad") {
    embedding_bwd_kernel<<<grid(N / 8), kThreads, 0, s>>>(b(0), n(1), f(2), R, C);
  } else if (op == "cross_entropy") {
    xent_fwd_kernel<<<rows, kThreads, 0, s>>>(b(0), n(1), f(2), f(3), C);
  } else if (op == "cross_entropy.grad") {
    xent_bwd_kernel<<<grid(N / 8), kThreads, 0, s>>>(f(0), n(1), b(2), R, C);
  } else if (op == "grad_norm") {
    grad_norm_kernel<<<kGradNormBlocks, kThreads, 0, s>>>(f(0), f(1), N / 4);
  } else if (op == "adam") {
    adam_kernel<<<grid(N / 4), kThreads, 0, s>>>(AdamParams{}, f(0), f(1), f(2), f(3), b(4), N / 4);
  } else if (launch_routing_op(op, R, C, t, s)) {
    return;
  } else {
    throw std::runtime_error("no kernel for memory op " + op);
  }
  TS_LAUNCHED();
}

// ---------------------------------------------------------------- host reference (double)

using HostTensors = std::vector<std::vector<float>>;

// Expected values of the op's outputs (same order as its output tensors) from its inputs.
std::vector<std::vector<double>> reference(const std::string& op, std::size_t R, std::size_t C,
                                           const HostTensors& t) {
  const std::size_t N = R * C;
  std::vector<std::vector<double>> out;
  auto row_stats = [&](const std::vector<float>& x, std::size_t r) {
    double s = 0, ss = 0;
    for (std::size_t c = 0; c < C; ++c) {
      s += x[r * C + c];
      ss += static_cast<double>(x[r * C + c]) * x[r * C + c];
    }
    return std::pair<double, double>{s / static_cast<double>(C), ss / static_cast<double>(C)};
  };
  if (op == "copy") {
    out.push_back(std::vector<double>(t[0].begin(), t[0].end()));
  } else if (op == "add") {
    std::vector<double> o(N);
    for (std::size_t i = 0; i < N; ++i) o[i] = static_cast<double>(t[0][i]) + t[1][i];
    out.push_back(o);
  } else if (op == "rmsnorm" || op == "rmsnorm.grad") {
    std::vector<double> o(N);
    for (std::size_t r = 0; r < R; ++r) {
      const double rs = 1.0 / std::sqrt(row_stats(t[0], r).second + kEps);
      double dot = 0;
      if (op == "rmsnorm.grad") {
        for (std::size_t c = 0; c < C; ++c)
          dot += static_cast<double>(t[0][r * C + c]) * t[1][c] * t[2][r * C + c];
      }
      for (std::size_t c = 0; c < C; ++c) {
        const double x = t[0][r * C + c], w = t[1][c];
        o[r * C + c] = op == "rmsnorm" ? x * rs * w
                                       : rs * w * t[2][r * C + c] -
                                             dot * rs * rs * rs / static_cast<double>(C) * x;
      }
    }
    out.push_back(o);
  } else if (op == "layernorm" || op == "layernorm.grad") {
    std::vector<double> o(N);
    for (std::size_t r = 0; r < R; ++r) {
      const auto [mean, sq] = row_stats(t[0], r);
      const double rstd = 1.0 / std::sqrt(std::max(sq - mean * mean, 0.0) + kEps);
      double mg = 0, mgx = 0;
      if (op == "layernorm.grad") {
        for (std::size_t c = 0; c < C; ++c) {
          const double g = static_cast<double>(t[1][c]) * t[2][r * C + c];
          mg += g;
          mgx += g * (t[0][r * C + c] - mean) * rstd;
        }
        mg /= static_cast<double>(C);
        mgx /= static_cast<double>(C);
      }
      for (std::size_t c = 0; c < C; ++c) {
        const double xh = (t[0][r * C + c] - mean) * rstd;
        o[r * C + c] =
            op == "layernorm"
                ? xh * t[1][c] + t[2][c]
                : rstd * (static_cast<double>(t[1][c]) * t[2][r * C + c] - mg - xh * mgx);
      }
    }
    out.push_back(o);
  } else if (op == "cast" || op == "cast.grad") {
    out.push_back(std::vector<double>(t[0].begin(), t[0].end()));
  } else if (op == "rope" || op == "rope.grad") {
    std::vector<double> o(N);
    const double sign = op == "rope" ? 1.0 : -1.0;
    for (std::size_t r = 0; r < R; ++r) {
      for (std::size_t p = 0; p < C / 2; ++p) {
        const double a = sign * static_cast<double>(r) *
                         std::pow(10000.0, -2.0 * static_cast<double>(p % 64) / 128.0);
        const double x0 = t[0][r * C + 2 * p], x1 = t[0][r * C + 2 * p + 1];
        o[r * C + 2 * p] = x0 * std::cos(a) - x1 * std::sin(a);
        o[r * C + 2 * p + 1] = x0 * std::sin(a) + x1 * std::cos(a);
      }
    }
    out.push_back(o);
  } else if (gated(op)) {
    const Act a = act_of(op);
    const auto& in = is_grad(op) ? t[1] : t[0];
    std::vector<double> o(is_grad(op) ? 2 * N : N);
    for (std::size_t r = 0; r < R; ++r) {
      for (std::size_t c = 0; c < C; ++c) {
        const float g = in[r * 2 * C + c], u = in[r * 2 * C + C + c];
        if (is_grad(op)) {
          const double d = t[0][r * C + c];
          o[r * 2 * C + c] = d * u * act_grad(a, g);
          o[r * 2 * C + C + c] = d * act(a, g);
        } else {
          o[r * C + c] = static_cast<double>(act(a, g)) * u;
        }
      }
    }
    out.push_back(o);
  } else if (op == "gelu" || op == "relu" || op == "squared_relu" || op == "gelu.grad" ||
             op == "relu.grad" || op == "squared_relu.grad") {
    const Act a = act_of(op);
    std::vector<double> o(N);
    for (std::size_t i = 0; i < N; ++i) {
      o[i] = is_grad(op) ? static_cast<double>(t[1][i]) * act_grad(a, t[0][i]) : act(a, t[0][i]);
    }
    out.push_back(o);
  } else if (op == "embedding") {
    std::vector<double> o(N);
    for (std::size_t r = 0; r < R; ++r) {
      for (std::size_t c = 0; c < C; ++c)
        o[r * C + c] = t[0][static_cast<std::size_t>(t[1][r]) * C + c];
    }
    out.push_back(o);
  } else if (op == "embedding.grad") {
    std::vector<double> o(t[2].begin(), t[2].end());
    for (std::size_t r = 0; r < R; ++r) {
      for (std::size_t c = 0; c < C; ++c)
        o[static_cast<std::size_t>(t[1][r]) * C + c] += t[0][r * C + c];
    }
    out.push_back(o);
  } else if (op == "cross_entropy") {
    std::vector<double> sm(N), loss(R);
    for (std::size_t r = 0; r < R; ++r) {
      double m = -INFINITY, s = 0;
      for (std::size_t c = 0; c < C; ++c) m = std::max(m, static_cast<double>(t[0][r * C + c]));
      for (std::size_t c = 0; c < C; ++c) s += std::exp(t[0][r * C + c] - m);
      for (std::size_t c = 0; c < C; ++c) sm[r * C + c] = std::exp(t[0][r * C + c] - m) / s;
      loss[r] = std::log(s) + m - t[0][r * C + static_cast<std::size_t>(t[1][r])];
    }
    out.push_back(sm);
    out.push_back(loss);
  } else if (op == "cross_entropy.grad") {
    std::vector<double> o(t[0].begin(), t[0].end());
    for (std::size_t r = 0; r < R; ++r) o[r * C + static_cast<std::size_t>(t[1][r])] -= 1.0;
    out.push_back(o);
  } else if (op == "grad_norm") {
    double s = 0;
    for (float g : t[0]) s += static_cast<double>(g) * g;
    out.push_back({s});  // compared with the sum of the partial sums
  } else if (op == "adam") {
    std::vector<double> p(N), m(N), v(N), w(N);
    const AdamParams a;
    for (std::size_t i = 0; i < N; ++i) {
      float pi = t[1][i], mi = t[2][i], vi = t[3][i];
      adam_update(a, t[0][i], pi, mi, vi);
      p[i] = pi;
      m[i] = mi;
      v[i] = vi;
      w[i] = pi;
    }
    out = {p, m, v, w};
  } else if (auto routing = routing_reference(op, R, C, t)) {
    out = std::move(*routing);
  }
  return out;
}

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
    specs_ = tensors_of(shape_.op, R, C);
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
    launch_op(shape_.op, static_cast<std::size_t>(shape_.rows),
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
    const auto want = reference(small.op, static_cast<std::size_t>(small.rows),
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
  const auto specs = tensors_of(shape.op, static_cast<std::size_t>(shape.rows),
                                static_cast<std::size_t>(shape.cols));
  if (specs.empty()) return nullptr;
  // Vector widths: 8 BF16 (or 4 fp32) elements per access, along a row.
  if (shape.cols % 8 != 0) return nullptr;
  return std::make_unique<MemoryRunner>(shape, c, true);
}

}  // namespace trainsim::kernels
