#pragma once
// The suite's memory-bound ops over whole rows: RMSNorm and LayerNorm (one block per row), the
// embedding gather and its fp32 scatter-add, softmax cross-entropy; each forward and backward.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/cuda/memory_common.cuh"

namespace trainsim::kernels {

/// The op's tensors at `rows` x `cols`, in the order its kernel takes them; empty when `op` is
/// not one of these.
std::vector<TensorSpec> row_tensors(const std::string& op, std::size_t rows, std::size_t cols);

/// Launches the op on `stream`, its tensors in row_tensors' order; false when `op` is not one of
/// these.
bool launch_row_op(const std::string& op, std::size_t rows, std::size_t cols, void* const* t,
                   cudaStream_t stream);

}  // namespace trainsim::kernels
