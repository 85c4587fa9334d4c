#pragma once
// One micro-batch on one GPU as the memory model prices it (memory.cpp: the blocks' footprints;
// layer_activations.cpp: a decoder layer's activations): its shape, and the bytes of the tensors
// kept beside the BF16 activations.
#include <cstdint>

#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim::memory_detail {

inline constexpr double kTokenIdBytes = 8;  // int64 token ids
inline constexpr double kMaskBytes = 1;     // dropout masks
inline constexpr double kFp32 = 4;

inline double d(std::int64_t v) {
  return static_cast<double>(v);
}

// Tokens of one micro-batch on one GPU, and the divisor of the tensors that tensor parallelism
// leaves replicated (sequence parallelism splits them too). Context parallelism keeps 1/cp of
// every sequence's tokens, and so of every activation, on each GPU.
struct Shape {
  double tokens;  // b * s / cp
  double seq;
  double h;
  double t;
  double r;  // t with sequence parallelism, else 1
};

inline Shape shape_of(const Model& model, const Plan& plan) {
  const double t = d(plan.tp);
  return {d(plan.mbs) * d(plan.seq_len) / d(plan.cp), d(plan.seq_len), d(model.hidden_size), t,
          plan.sp ? t : 1.0};
}

}  // namespace trainsim::memory_detail
