#pragma once
// The suite's mixture-of-experts routing kernels (the router's softmax and top-k, the token
// permutation to the experts and back, each with its gradient) and Transformer Engine's FP8
// cast-transpose of a GEMM operand. What each computes, and its tensors in order:
// kernels/host/routing_reference.hpp.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/cuda/memory_common.cuh"

namespace trainsim::kernels {

/// The op's tensors at `rows` x `cols`: empty when `op` is not one of these, or when the shape
/// does not suit its kernel (rows not whole tokens of kSuiteTopK rows, a router wider than
/// kMaxRouterCols experts, rows of the cast-transpose not a multiple of 8).
std::vector<TensorSpec> routing_tensors(const std::string& op, std::size_t rows, std::size_t cols);

/// Launches the op on `stream`, its tensors in routing_tensors' order; false when `op` is not
/// one of these.
bool launch_routing_op(const std::string& op, std::size_t rows, std::size_t cols, void* const* t,
                       cudaStream_t stream);

}  // namespace trainsim::kernels
