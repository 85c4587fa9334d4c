// Kernels for the ops of kernels/host/routing_reference.hpp. Bytes each moves, per element of
// rows x cols: memory_ops() in sim/platform/kernel_shape.cpp.
#include <cuda_fp8.h>

#include <algorithm>
#include <climits>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/routing_kernels.cuh"
#include "kernels/host/routing_reference.hpp"

namespace trainsim::kernels {

namespace {

// One warp per router row, each lane holding kPerLane of its logits (columns lane + 32 i): the
// width is a template parameter so that a narrow router keeps few registers and a full SM of
// warps (one kernel for every width held 32 per lane, took 143 registers and ran a 4096 x 8
// router 10 times slower than its bytes on an H100).
constexpr int kMaxRouterCols = 1024;
constexpr int kWarps = kThreads / 32;

// Softmax over the row, kept at its k largest logits (the lower column on a tie), zero elsewhere.
template <int kPerLane>
__global__ void router_fwd_kernel(const bf16* logits, float* probs, std::size_t rows, int cols,
                                  int k) {
  const std::size_t row = blockIdx.x * static_cast<std::size_t>(kWarps) + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= rows) return;  // the whole warp
  const bf16* x = logits + row * static_cast<std::size_t>(cols);
  float v[kPerLane];
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int c = lane + 32 * i;
    v[i] = c < cols ? __bfloat162float(x[c]) : -INFINITY;
    m = fmaxf(m, v[i]);
  }
  m = warp_max(m);
  float e[kPerLane];
  float s = 0;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    e[i] = lane + 32 * i < cols ? expf(v[i] - m) : 0.0f;
    s += e[i];
  }
  s = warp_sum(s);
  unsigned chosen = 0;  // bit i: column lane + 32 i
  for (int j = 0; j < k; ++j) {
    float best = -INFINITY;
    int best_c = INT_MAX;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int c = lane + 32 * i;
      if (c < cols && !((chosen >> i) & 1U) && (v[i] > best || (v[i] == best && c < best_c))) {
        best = v[i];
        best_c = c;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffU, best, o);
      const int oc = __shfl_xor_sync(0xffffffffU, best_c, o);
      if (ob > best || (ob == best && oc < best_c)) {
        best = ob;
        best_c = oc;
      }
    }
    if (best_c % 32 == lane) chosen |= 1U << (best_c / 32);
  }
  float* p = probs + row * static_cast<std::size_t>(cols);
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int c = lane + 32 * i;
    if (c < cols) p[c] = (chosen >> i) & 1U ? e[i] / s : 0.0f;
  }
}

// False, launching nothing, for a router over kMaxRouterCols experts wide.
bool launch_router_fwd(const bf16* logits, float* probs, std::size_t rows, int cols, int k,
                       unsigned grid, cudaStream_t s) {
  if (cols > kMaxRouterCols) return false;
  if (cols <= 32) {
    router_fwd_kernel<1><<<grid, kThreads, 0, s>>>(logits, probs, rows, cols, k);
  } else if (cols <= 64) {
    router_fwd_kernel<2><<<grid, kThreads, 0, s>>>(logits, probs, rows, cols, k);
  } else if (cols <= 128) {
    router_fwd_kernel<4><<<grid, kThreads, 0, s>>>(logits, probs, rows, cols, k);
  } else if (cols <= 256) {
    router_fwd_kernel<8><<<grid, kThreads, 0, s>>>(logits, probs, rows, cols, k);
  } else if (cols <= 512) {
    router_fwd_kernel<16><<<grid, kThreads, 0, s>>>(logits, probs, rows, cols, k);
  } else {
    router_fwd_kernel<kMaxRouterCols / 32><<<grid, kThreads, 0, s>>>(logits, probs, rows, cols, k);
  }
  return true;
}

__global__ void router_bwd_kernel(const float* probs, const float* dprobs, bf16* dlogits,
                                  std::size_t rows, int cols) {
  const std::size_t row = blockIdx.x * static_cast<std::size_t>(kWarps) + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= rows) return;
  const std::size_t base = row * static_cast<std::size_t>(cols);
  float dot = 0;
  for (int c = lane; c < cols; c += 32) dot += probs[base + c] * dprobs[base + c];
  dot = warp_sum(dot);
  for (int c = lane; c < cols; c += 32) {
    dlogits[base + c] = __float2bfloat16(probs[base + c] * (dprobs[base + c] - dot));
  }
}

// One block per token: its row read once and written to its kSuiteTopK rows among the experts'.
__global__ void permute_fwd_kernel(const bf16* x, const int* map, bf16* y, std::size_t cols) {
  const std::size_t t = blockIdx.x, packs = cols / 8;
  for (std::size_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack8 v = reinterpret_cast<const Pack8*>(x + t * cols)[p];
#pragma unroll
    for (int j = 0; j < kSuiteTopK; ++j) {
      const auto row = static_cast<std::size_t>(map[t * kSuiteTopK + j]);
      reinterpret_cast<Pack8*>(y + row * cols)[p] = v;
    }
  }
}

// The token's kSuiteTopK rows summed, each weighed by its probability (none: the permutation's
// gradient).
__global__ void gather_sum_kernel(const bf16* in, const int* map, const float* probs, bf16* out,
                                  std::size_t cols) {
  const std::size_t t = blockIdx.x, packs = cols / 8;
  for (std::size_t p = threadIdx.x; p < packs; p += blockDim.x) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, v[8];
#pragma unroll
    for (int j = 0; j < kSuiteTopK; ++j) {
      const auto row = static_cast<std::size_t>(map[t * kSuiteTopK + j]);
      const float w = probs ? probs[t * kSuiteTopK + j] : 1.0f;
      load8(in + row * cols + 8 * p, v);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] += w * v[e];
    }
    store8(out + t * cols + 8 * p, acc);
  }
}

// One block per token: for each of its rows, the gradient sent back weighed by the probability,
// and the probability's gradient, the dot product of the token's gradient and the row.
__global__ void unpermute_bwd_kernel(const bf16* dout, const bf16* y, const int* map,
                                     const float* probs, bf16* dy, float* dprobs,
                                     std::size_t cols) {
  const std::size_t t = blockIdx.x, packs = cols / 8;
  for (int j = 0; j < kSuiteTopK; ++j) {
    const auto row = static_cast<std::size_t>(map[t * kSuiteTopK + j]);
    const float w = probs[t * kSuiteTopK + j];
    float dot = 0;
    for (std::size_t p = threadIdx.x; p < packs; p += blockDim.x) {
      float d[8], v[8], o[8];
      load8(dout + t * cols + 8 * p, d);
      load8(y + row * cols + 8 * p, v);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        o[e] = w * d[e];
        dot += d[e] * v[e];
      }
      store8(dy + row * cols + 8 * p, o);
    }
    dot = block_sum(dot);
    if (threadIdx.x == 0) dprobs[t * kSuiteTopK + j] = dot;
  }
}

// Eight FP8 bytes, stored or loaded as one 8-byte word.
union Fp8x8 {
  __nv_fp8_storage_t b[8];
  uint2 u;
};

// Eight floats as FP8 E4M3 at scale 1 (saturated), their largest magnitude folded into `amax`.
__device__ __forceinline__ Fp8x8 cast8(const float (&f)[8], float& amax) {
  Fp8x8 q;
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    q.b[e] = __nv_cvt_float_to_fp8(f[e], __NV_SATFINITE, __NV_E4M3);
    amax = fmaxf(amax, fabsf(f[e]));
  }
  return q;
}

// The block's largest magnitude folded into the op's (non-negative floats order as their bits).
__device__ __forceinline__ void fold_amax(float local, float* amax) {
  local = block_max(local);
  if (threadIdx.x == 0) atomicMax(reinterpret_cast<int*>(amax), __float_as_int(local));
}

// The FP8 kernels' 64 x 64 tiles: each thread moves 8 bytes of a row, then 8 of a column.
constexpr int kTile = 64;
using Fp8Tile = __nv_fp8_storage_t[kTile][kTile + 8];

// The block's tile written transposed (the weight-gradient layout) into yT [cols x rows].
__device__ __forceinline__ void store_transposed(const Fp8Tile& tile, __nv_fp8_storage_t* yt,
                                                 std::size_t r0, std::size_t c0, std::size_t rows,
                                                 std::size_t cols) {
  for (int i = static_cast<int>(threadIdx.x); i < kTile * kTile / 8; i += blockDim.x) {
    const int tc = i / (kTile / 8), tr = (i % (kTile / 8)) * 8;
    const std::size_t r = r0 + tr, c = c0 + tc;
    if (r >= rows || c >= cols) continue;
    Fp8x8 q;
#pragma unroll
    for (int e = 0; e < 8; ++e) q.b[e] = tile[tr + e][tc];
    *reinterpret_cast<uint2*>(yt + c * rows + r) = q.u;
  }
}

// Transformer Engine's cast-transpose at scale 1: a 64 x 64 tile read once (8 BF16 a thread),
// written as FP8 in both layouts through shared memory, and the tile's largest magnitude
// folded into amax.
__global__ void cast_transpose_kernel(const bf16* x, __nv_fp8_storage_t* y, __nv_fp8_storage_t* yt,
                                      float* amax, std::size_t rows, std::size_t cols) {
  __shared__ Fp8Tile tile;
  const std::size_t r0 = blockIdx.y * static_cast<std::size_t>(kTile),
                    c0 = blockIdx.x * static_cast<std::size_t>(kTile);
  float local = 0;
  for (int i = static_cast<int>(threadIdx.x); i < kTile * kTile / 8; i += blockDim.x) {
    const int tr = i / (kTile / 8), tc = (i % (kTile / 8)) * 8;
    const std::size_t r = r0 + tr, c = c0 + tc;
    if (r >= rows || c >= cols) continue;
    float f[8];
    load8(x + r * cols + c, f);
    const Fp8x8 q = cast8(f, local);
#pragma unroll
    for (int e = 0; e < 8; ++e) tile[tr][tc + e] = q.b[e];
    *reinterpret_cast<uint2*>(y + r * cols + c) = q.u;
  }
  __syncthreads();
  store_transposed(tile, yt, r0, c0, rows, cols);
  fold_amax(local, amax);
}

// Transformer Engine's cast of an operand used only row-wise (a frozen weight's input): 8 BF16
// a thread read once and written as FP8 in their own layout, the block's largest magnitude
// folded into amax.
__global__ void cast_kernel(const bf16* x, __nv_fp8_storage_t* y, float* amax, std::size_t n8) {
  float local = 0;
  TS_GRID_STRIDE(i, n8) {
    float f[8];
    load8(x + 8 * i, f);
    *reinterpret_cast<uint2*>(y + 8 * i) = cast8(f, local).u;
  }
  fold_amax(local, amax);
}

// An FP8 weight's transpose (Transformer Engine's, once a step for the weight-gradient layout):
// a 64 x 64 tile of bytes read 8 at a time into shared memory and written transposed.
__global__ void transpose_fp8_kernel(const __nv_fp8_storage_t* x, __nv_fp8_storage_t* yt,
                                     std::size_t rows, std::size_t cols) {
  __shared__ Fp8Tile tile;
  const std::size_t r0 = blockIdx.y * static_cast<std::size_t>(kTile),
                    c0 = blockIdx.x * static_cast<std::size_t>(kTile);
  for (int i = static_cast<int>(threadIdx.x); i < kTile * kTile / 8; i += blockDim.x) {
    const int tr = i / (kTile / 8), tc = (i % (kTile / 8)) * 8;
    const std::size_t r = r0 + tr, c = c0 + tc;
    if (r >= rows || c >= cols) continue;
    Fp8x8 q;
    q.u = *reinterpret_cast<const uint2*>(x + r * cols + c);
#pragma unroll
    for (int e = 0; e < 8; ++e) tile[tr][tc + e] = q.b[e];
  }
  __syncthreads();
  store_transposed(tile, yt, r0, c0, rows, cols);
}

unsigned blocks(std::size_t n) {
  return static_cast<unsigned>(n);
}

bool routed(const std::string& op) {
  return op.rfind("moe_", 0) == 0 && op.rfind("moe_router", 0) != 0;
}

}  // namespace

std::vector<TensorSpec> routing_tensors(const std::string& op, std::size_t R, std::size_t C) {
  const Elem B = Elem::kBF16, F = Elem::kF32, I = Elem::kI32;
  const std::size_t N = R * C, T = R / kSuiteTopK;
  const TensorSpec map{I, R, Role::kIn, 1.0f, 1, false, true};
  if (op == "moe_router") {
    if (C > static_cast<std::size_t>(kMaxRouterCols)) return {};
    return {{B, N, Role::kIn}, {F, N, Role::kOut}};
  }
  if (op == "moe_router.grad") {
    if (C > static_cast<std::size_t>(kMaxRouterCols)) return {};
    return {{F, N, Role::kIn}, {F, N, Role::kIn}, {B, N, Role::kOut}};
  }
  if (op == "fp8_cast") {
    if (N % 8 != 0) return {};
    return {{B, N, Role::kIn}, {Elem::kFP8, N, Role::kOut}, {F, 1, Role::kOut}};
  }
  if (op == "fp8_transpose") {
    if (R % 8 != 0 || C % 8 != 0) return {};
    return {{Elem::kFP8, N, Role::kIn}, {Elem::kFP8, N, Role::kOut}};
  }
  if (op == "fp8_cast_transpose") {
    if (R % 8 != 0) return {};
    return {{B, N, Role::kIn},
            {Elem::kFP8, N, Role::kOut},
            {Elem::kFP8, N, Role::kOut},
            {F, 1, Role::kOut}};
  }
  if (!routed(op) || R % kSuiteTopK != 0) return {};
  if (op == "moe_permute") return {{B, T * C, Role::kIn}, map, {B, N, Role::kOut}};
  if (op == "moe_permute.grad") return {{B, N, Role::kIn}, map, {B, T * C, Role::kOut}};
  if (op == "moe_unpermute") {
    return {{B, N, Role::kIn}, map, {F, R, Role::kIn}, {B, T * C, Role::kOut}};
  }
  if (op == "moe_unpermute.grad") {
    return {{B, T * C, Role::kIn}, {B, N, Role::kIn},  map,
            {F, R, Role::kIn},     {B, N, Role::kOut}, {F, R, Role::kOut}};
  }
  return {};
}

bool launch_routing_op(const std::string& op, std::size_t R, std::size_t C, void* const* t,
                       cudaStream_t s) {
  auto b = [&](int i) { return static_cast<bf16*>(t[i]); };
  auto f = [&](int i) { return static_cast<float*>(t[i]); };
  auto n = [&](int i) { return static_cast<const int*>(t[i]); };
  auto q = [&](int i) { return static_cast<__nv_fp8_storage_t*>(t[i]); };
  const unsigned warp_rows = blocks((R + kWarps - 1) / kWarps), tokens = blocks(R / kSuiteTopK);
  const int cols = static_cast<int>(C);
  if (op == "moe_router") {
    if (!launch_router_fwd(b(0), f(1), R, cols, std::min(kSuiteTopK, cols), warp_rows, s)) {
      return false;
    }
  } else if (op == "moe_router.grad") {
    router_bwd_kernel<<<warp_rows, kThreads, 0, s>>>(f(0), f(1), b(2), R, cols);
  } else if (op == "moe_permute") {
    permute_fwd_kernel<<<tokens, kThreads, 0, s>>>(b(0), n(1), b(2), C);
  } else if (op == "moe_permute.grad") {
    gather_sum_kernel<<<tokens, kThreads, 0, s>>>(b(0), n(1), nullptr, b(2), C);
  } else if (op == "moe_unpermute") {
    gather_sum_kernel<<<tokens, kThreads, 0, s>>>(b(0), n(1), f(2), b(3), C);
  } else if (op == "moe_unpermute.grad") {
    unpermute_bwd_kernel<<<tokens, kThreads, 0, s>>>(b(0), b(1), n(2), f(3), b(4), f(5), C);
  } else if (op == "fp8_cast") {
    TS_CUDA(cudaMemsetAsync(t[2], 0, sizeof(float), s));
    const std::size_t n8 = R * C / 8;
    cast_kernel<<<blocks(grid_size(n8)), kThreads, 0, s>>>(b(0), q(1), f(2), n8);
  } else if (op == "fp8_transpose") {
    const dim3 grid(blocks((C + kTile - 1) / kTile), blocks((R + kTile - 1) / kTile));
    transpose_fp8_kernel<<<grid, kThreads, 0, s>>>(q(0), q(1), R, C);
  } else if (op == "fp8_cast_transpose") {
    TS_CUDA(cudaMemsetAsync(t[3], 0, sizeof(float), s));
    const dim3 grid(blocks((C + kTile - 1) / kTile), blocks((R + kTile - 1) / kTile));
    cast_transpose_kernel<<<grid, kThreads, 0, s>>>(b(0), q(1), q(2), f(3), R, C);
  } else {
    return false;
  }
  TS_LAUNCHED();
  return true;
}

}  // namespace trainsim::kernels
