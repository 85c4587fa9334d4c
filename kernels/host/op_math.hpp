#pragma once
// The arithmetic the suite's memory-bound kernels and their host references share, written once
// for both compilers: the MLP activations and their derivatives, the norms' epsilon, and one
// fused Adam step. Which activation an op name stands for, and whether it is a gradient.
#include <cmath>
#include <string>

#ifdef __CUDACC__
#define TS_HOST_DEVICE __host__ __device__
#else
#define TS_HOST_DEVICE
#endif

namespace trainsim::kernels {

/// RMSNorm's and LayerNorm's epsilon.
inline constexpr float kNormEps = 1e-5f;

/// Activations: value and derivative. Gelu is the tanh approximation.
enum class Act { kSilu, kGelu, kRelu, kSquaredRelu };

TS_HOST_DEVICE inline float act(Act a, float x) {
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

TS_HOST_DEVICE inline float act_grad(Act a, float x) {
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

/// Adam with decoupled weight decay at step 10 (its bias corrections).
struct AdamParams {
  float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
  float bias1 = 1.0f - 0.3486784401f;  // 1 - beta1^10 (step 10)
  float bias2 = 1.0f - 0.5987369392f;  // 1 - beta2^10
};

TS_HOST_DEVICE inline void adam_update(const AdamParams& a, float g, float& p, float& m, float& v) {
  m = a.beta1 * m + (1.0f - a.beta1) * g;
  v = a.beta2 * v + (1.0f - a.beta2) * g * g;
  const float mh = m / a.bias1, vh = v / a.bias2;
  p -= a.lr * (mh / (sqrtf(vh) + a.eps) + a.weight_decay * p);
}

inline Act act_of(const std::string& op) {
  if (op.rfind("swiglu", 0) == 0) return Act::kSilu;
  if (op.rfind("geglu", 0) == 0 || op.rfind("gelu", 0) == 0) return Act::kGelu;
  if (op.rfind("squared_relu", 0) == 0) return Act::kSquaredRelu;
  return Act::kRelu;
}

/// A gated MLP activation: the op reads a gate and an up half per row.
inline bool gated(const std::string& op) {
  return op.rfind("swiglu", 0) == 0 || op.rfind("geglu", 0) == 0;
}

inline bool is_grad(const std::string& op) {
  return op.size() > 5 && op.compare(op.size() - 5, 5, ".grad") == 0;
}

}  // namespace trainsim::kernels
