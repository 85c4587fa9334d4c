#pragma once
// What the suite's mixture-of-experts routing kernels and its FP8 casts and transpose must
// compute (kernels/cuda/routing_kernels.cu), in double precision from their inputs: the
// references the kernels are checked against on the GPU before they are timed. Plain C++, so
// that the references are themselves tested without a GPU.
//
// The ops and their tensors, in order (R = rows, C = cols, T = R / kSuiteTopK tokens; B BF16,
// F fp32, I int32, Q FP8 E4M3):
//   moe_router          logits B[R,C] -> probs F[R,C]: softmax over the row, kept at the row's
//                       top min(kSuiteTopK, C) experts, zero elsewhere
//   moe_router.grad     probs F[R,C], dprobs F[R,C] -> dlogits B[R,C] = p (dp - sum(p dp))
//   moe_permute         x B[T,C], map I[R] -> y B[R,C]: y[map[t k + j]] = x[t]
//   moe_permute.grad    dy B[R,C], map I[R] -> dx B[T,C] = sum_j dy[map[t k + j]]
//   moe_unpermute       y B[R,C], map I[R], probs F[R] -> out B[T,C] = sum_j probs y[map]
//   moe_unpermute.grad  dout B[T,C], y B[R,C], map I[R], probs F[R] -> dy B[R,C] at map[t k + j]
//                       = probs dout[t], dprobs F[R] = dout[t] . y[map[t k + j]]
//   fp8_cast            x B[R,C] -> y Q[R,C] (x at scale 1, saturated), amax F[1]
//   fp8_transpose       x Q[R,C] -> yT Q[C,R]
//   fp8_cast_transpose  x B[R,C] -> y Q[R,C], yT Q[C,R] (x at scale 1, saturated), amax F[1]
// `map` (Transformer Engine's row_id_map) is a permutation of [0, R): where each (token, choice)
// lands among the rows grouped by expert.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sim/platform/kernel_shape.hpp"  // kSuiteTopK

namespace trainsim::kernels {

/// The nearest FP8 E4M3 value (round half to even, saturated at +-448), as CUDA's
/// __nv_fp8_e4m3 conversion with __NV_SATFINITE gives it.
double round_to_e4m3(double x);

/// The `k` columns a row of logits chooses: the highest first, the lower column on a tie.
std::vector<std::size_t> top_k(const std::vector<double>& row, std::size_t k);

/// Outputs, in the order of the op's output tensors, of one of the ops above from all its
/// tensors (outputs included, as allocated); std::nullopt for any other op.
std::optional<std::vector<std::vector<double>>> routing_reference(
    const std::string& op, std::size_t rows, std::size_t cols,
    const std::vector<std::vector<float>>& tensors);

}  // namespace trainsim::kernels
