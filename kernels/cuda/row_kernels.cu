// Kernels for the ops of row_kernels.cuh. Bytes each moves, per element of rows x cols:
// memory_ops() in sim/platform/kernel_shape.cpp.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/row_kernels.cuh"
#include "kernels/host/op_math.hpp"

namespace trainsim::kernels {

namespace {

// ---------------------------------------------------------------- rows (one block per row)

__global__ void rmsnorm_fwd_kernel(const bf16* x, const bf16* w, bf16* y, std::size_t cols) {
  const bf16* xr = x + blockIdx.x * cols;
  float ss = 0;
  for (std::size_t c = 8 * threadIdx.x; c < cols; c += 8 * kThreads) {
    float v[8];
    load8(xr + c, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) ss += v[j] * v[j];
  }
  const float r = rsqrtf(block_sum(ss) / static_cast<float>(cols) + kNormEps);
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
  const float r = rsqrtf(block_sum(ss) / n + kNormEps);
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
  const float rstd = rsqrtf(fmaxf(block_sum(ss) / n - mean * mean, 0.0f) + kNormEps);
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
  const float rstd = rsqrtf(fmaxf(block_sum(ss) / n - mean * mean, 0.0f) + kNormEps);
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

// Rows of the embedding table: at least as many as the tokens, capped at 2^31 bytes (BF16).
std::size_t table_rows(std::size_t rows, std::size_t cols) {
  const std::size_t cap = (std::size_t{1} << 30) / cols;
  return std::max<std::size_t>(std::min<std::size_t>(std::max<std::size_t>(rows, 32768), cap), 1);
}

}  // namespace

std::vector<TensorSpec> row_tensors(const std::string& op, std::size_t R, std::size_t C) {
  const std::size_t N = R * C;
  const Elem B = Elem::kBF16, F = Elem::kF32, I = Elem::kI32;
  if (op == "rmsnorm") return {{B, N, Role::kIn}, {B, C, Role::kIn}, {B, N, Role::kOut}};
  if (op == "rmsnorm.grad" || op == "layernorm.grad") {
    return {{B, N, Role::kIn}, {B, C, Role::kIn}, {B, N, Role::kIn}, {B, N, Role::kOut}};
  }
  if (op == "layernorm") {
    return {{B, N, Role::kIn}, {B, C, Role::kIn}, {B, C, Role::kIn}, {B, N, Role::kOut}};
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
  return {};
}

bool launch_row_op(const std::string& op, std::size_t R, std::size_t C, void* const* t,
                   cudaStream_t s) {
  const std::size_t N = R * C;
  auto b = [&](int i) { return static_cast<bf16*>(t[i]); };
  auto f = [&](int i) { return static_cast<float*>(t[i]); };
  auto n = [&](int i) { return static_cast<int*>(t[i]); };
  const auto rows = static_cast<unsigned>(R);
  if (op == "rmsnorm") {
    rmsnorm_fwd_kernel<<<rows, kThreads, 0, s>>>(b(0), b(1), b(2), C);
  } else if (op == "rmsnorm.grad") {
    rmsnorm_bwd_kernel<<<rows, kThreads, 0, s>>>(b(0), b(1), b(2), b(3), C);
  } else if (op == "layernorm") {
    layernorm_fwd_kernel<<<rows, kThreads, 0, s>>>(b(0), b(1), b(2), b(3), C);
  } else if (op == "layernorm.grad") {
    layernorm_bwd_kernel<<<rows, kThreads, 0, s>>>(b(0), b(1), b(2), b(3), C);
  } else if (op == "embedding") {
    embedding_fwd_kernel<<<grid_size(N / 8), kThreads, 0, s>>>(b(0), n(1), b(2), R, C);
  } else if (op == "embedding.grad") {
    embedding_bwd_kernel<<<grid_size(N / 8), kThreads, 0, s>>>(b(0), n(1), f(2), R, C);
  } else if (op == "cross_entropy") {
    xent_fwd_kernel<<<rows, kThreads, 0, s>>>(b(0), n(1), f(2), f(3), C);
  } else if (op == "cross_entropy.grad") {
    xent_bwd_kernel<<<grid_size(N / 8), kThreads, 0, s>>>(f(0), n(1), b(2), R, C);
  } else {
    return false;
  }
  TS_LAUNCHED();
  return true;
}

}  // namespace trainsim::kernels
