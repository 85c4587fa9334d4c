// The memory-bound kernels of a training step, written here because no library provides them
// as such: residual add, the MLP activations (gated and not), RoPE, the casts, the gradient norm
// and the fused Adam step, each forward and backward; and the device-to-device copy
// (cudaMemcpyAsync), the bandwidth ceiling. The ops over whole rows (norms, embedding,
// cross-entropy) are in row_kernels.cu, the routing ops in routing_kernels.cu. Bytes moved per
// element match memory_ops() in sim/platform/kernel_shape.
#include <cuda_bf16.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/memory_common.cuh"
#include "kernels/cuda/memory_kernels.cuh"
#include "kernels/cuda/routing_kernels.cuh"
#include "kernels/cuda/row_kernels.cuh"
#include "kernels/host/op_math.hpp"

namespace trainsim::kernels {

namespace {

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

}  // namespace

std::vector<TensorSpec> memory_tensors(const std::string& op, std::size_t R, std::size_t C) {
  const std::size_t N = R * C;
  const Elem B = Elem::kBF16, F = Elem::kF32;
  if (op == "copy") return {{B, N, Role::kIn}, {B, N, Role::kOut}};
  if (op == "cast") return {{B, N, Role::kIn}, {F, N, Role::kOut}};
  if (op == "cast.grad") return {{F, N, Role::kIn}, {B, N, Role::kOut}};
  if (op == "add") return {{B, N, Role::kIn}, {B, N, Role::kIn}, {B, N, Role::kOut}};
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
  if (op == "grad_norm") return {{F, N, Role::kIn}, {F, kGradNormBlocks, Role::kOut}};
  if (op == "adam") {
    return {{F, N, Role::kIn, 1e-2f},
            {F, N, Role::kInOut},
            {F, N, Role::kInOut, 1e-2f},
            {F, N, Role::kInOut, 1e-4f, 1, true},
            {B, N, Role::kOut}};
  }
  auto rows = row_tensors(op, R, C);
  return rows.empty() ? routing_tensors(op, R, C) : rows;
}

void launch_memory_op(const std::string& op, std::size_t R, std::size_t C, void* const* t,
                      cudaStream_t s) {
  const std::size_t N = R * C;
  auto b = [&](int i) { return static_cast<bf16*>(t[i]); };
  auto f = [&](int i) { return static_cast<float*>(t[i]); };
  if (op == "copy") {
    TS_CUDA(cudaMemcpyAsync(t[1], t[0], N * 2, cudaMemcpyDeviceToDevice, s));
    return;
  }
  if (op == "add") {
    add_kernel<<<grid_size(N / 8), kThreads, 0, s>>>(b(0), b(1), b(2), N / 8);
  } else if (op == "cast") {
    cast_up_kernel<<<grid_size(N / 8), kThreads, 0, s>>>(b(0), f(1), N / 8);
  } else if (op == "cast.grad") {
    cast_down_kernel<<<grid_size(N / 8), kThreads, 0, s>>>(f(0), b(1), N / 8);
  } else if (op == "rope" || op == "rope.grad") {
    rope_kernel<<<grid_size(N / 8), kThreads, 0, s>>>(b(0), b(1), R, C,
                                                      op == "rope" ? 1.0f : -1.0f);
  } else if (gated(op) && !is_grad(op)) {
    gated_fwd_kernel<<<grid_size(N / 8), kThreads, 0, s>>>(act_of(op), b(0), b(1), R, C);
  } else if (gated(op)) {
    gated_bwd_kernel<<<grid_size(N / 8), kThreads, 0, s>>>(act_of(op), b(0), b(1), b(2), R, C);
  } else if (op == "gelu" || op == "relu" || op == "squared_relu") {
    act_fwd_kernel<<<grid_size(N / 8), kThreads, 0, s>>>(act_of(op), b(0), b(1), N / 8);
  } else if (op == "gelu.grad" || op == "relu.grad" || op == "squared_relu.grad") {
    act_bwd_kernel<<<grid_size(N / 8), kThreads, 0, s>>>(act_of(op), b(0), b(1), b(2), N / 8);
  } else if (op == "grad_norm") {
    grad_norm_kernel<<<kGradNormBlocks, kThreads, 0, s>>>(f(0), f(1), N / 4);
  } else if (op == "adam") {
    adam_kernel<<<grid_size(N / 4), kThreads, 0, s>>>(AdamParams{}, f(0), f(1), f(2), f(3), b(4),
                                                      N / 4);
  } else if (launch_row_op(op, R, C, t, s) || launch_routing_op(op, R, C, t, s)) {
    return;
  } else {
    throw std::runtime_error("no kernel for memory op " + op);
  }
  TS_LAUNCHED();
}

}  // namespace trainsim::kernels
