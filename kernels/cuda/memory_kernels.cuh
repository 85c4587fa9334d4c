#pragma once
// The suite's memory-bound ops as the runner (memory_runner.cu) sees them: each op's tensors and
// its launch. The kernels themselves: memory_kernels.cu (a training step's elementwise and
// optimizer ops), row_kernels.cu (norms, embedding, cross-entropy) and routing_kernels.cu (an MoE
// layer's routing, FP8 cast-transpose).
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/cuda/memory_common.cuh"

namespace trainsim::kernels {

/// Blocks of grad_norm's partial sums (its output's length).
inline constexpr std::size_t kGradNormBlocks = 1024;

/// The op's tensors at `rows` x `cols`, in the order its kernel takes them; empty where the suite
/// has no kernel for the op at that shape.
std::vector<TensorSpec> memory_tensors(const std::string& op, std::size_t rows, std::size_t cols);

/// Launches the op on `stream` (its tensors in memory_tensors' order); throws std::runtime_error
/// for an op without a kernel.
void launch_memory_op(const std::string& op, std::size_t rows, std::size_t cols, void* const* t,
                      cudaStream_t stream);

}  // namespace trainsim::kernels
