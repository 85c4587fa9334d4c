#pragma once
// What each of the suite's memory-bound kernels must compute (kernels/cuda/memory_kernels.cu and
// routing_kernels.cu), in double precision from its tensors: the reference every kernel is
// checked against on the GPU before it is timed. Plain C++, so that the references are tested
// without a GPU (tests/unit/memory_reference_test.cpp). Tensors in the order the kernel
// allocates them (kernels/cuda/memory_kernels.cu, tensors_of), rows x cols of the op's shape.
#include <cstddef>
#include <string>
#include <vector>

namespace trainsim::kernels {

using HostTensors = std::vector<std::vector<float>>;

/// Outputs, in the order of the op's output tensors, from all its tensors (outputs as allocated:
/// an in-out tensor's values before the launch). Empty for an op with no reference. grad_norm's
/// one output is the sum of squares, which the check compares with its partial sums' total.
std::vector<std::vector<double>> memory_reference(const std::string& op, std::size_t rows,
                                                  std::size_t cols, const HostTensors& tensors);

}  // namespace trainsim::kernels
