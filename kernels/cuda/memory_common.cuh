#pragma once
// What the suite's memory-bound kernels share: 8-wide BF16 access (16 bytes), warp and block
// reductions, and the description of an op's tensors (how each is allocated and filled).
#include <cuda_bf16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/device.cuh"

namespace trainsim::kernels {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 256;

/// Blocks of kThreads for `work` items of a grid-stride loop: at least 1, at most 65,536.
inline std::size_t grid_size(std::size_t work) {
  const std::size_t b = (work + kThreads - 1) / kThreads;
  return b == 0 ? 1 : (b > 65536 ? 65536 : b);
}

#define TS_GRID_STRIDE(i, n)                                                                     \
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)

struct alignas(16) Pack8 {
  bf16 v[8];
};

__device__ __forceinline__ void load8(const bf16* p, float (&f)[8]) {
  const Pack8 k = *reinterpret_cast<const Pack8*>(p);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = __bfloat162float(k.v[i]);
}

__device__ __forceinline__ void store8(bf16* p, const float (&f)[8]) {
  Pack8 k;
#pragma unroll
  for (int i = 0; i < 8; ++i) k.v[i] = __float2bfloat16(f[i]);
  *reinterpret_cast<Pack8*>(p) = k;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffU, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffU, v, o));
  return v;
}

// Over a block of kThreads threads; every thread of the block must call it.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warp_sums[kThreads / 32];
  v = warp_sum(v);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  __syncthreads();  // warp_sums may still be read from a previous call
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  float total = 0;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
  return total;
}

__device__ __forceinline__ float block_max(float v) {
  __shared__ float warp_maxima[kThreads / 32];
  v = warp_max(v);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  __syncthreads();
  if (lane == 0) warp_maxima[warp] = v;
  __syncthreads();
  float m = -INFINITY;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) m = fmaxf(m, warp_maxima[w]);
  return m;
}

enum class Role { kIn, kOut, kInOut };

struct TensorSpec {
  Elem elem;
  std::size_t count;
  Role role;
  float scale = 1.0f;
  std::int32_t int_range = 1;
  bool non_negative = false;  // |value|: Adam's second moment
  bool permutation = false;   // kI32: a permutation of [0, count) (a routing map)
};

}  // namespace trainsim::kernels
