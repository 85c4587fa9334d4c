#pragma once
// The kernels a block's passes are made of, by kind: GEMMs (with their FP8 quantisation and
// backward), memory-bound ops and elementwise ops, each with the shape the kernel-timing
// database is searched for.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/cost/layer_ops.hpp"

namespace trainsim {

/// x rounded to the nearest integer (shapes are whole; their inputs are counts as doubles).
std::int64_t whole(double x);

/// A GEMM [m x k] @ [k x n]: 2mkn FLOPs; reads both operands and writes the result. With
/// `groups` > 1, that many such products in one launch (a grouped GEMM: an MoE layer's local
/// experts, m rows each).
KernelSpec gemm(std::string name, double m, double k, double n, DType dtype,
                std::int64_t groups = 1);

/// A memory-bound op over rows x cols elements (memory_ops() gives its bytes per element).
KernelSpec memory(std::string name, KernelKind kind, std::string op, double rows, double cols);
KernelSpec elementwise(std::string name, std::string op, double rows, double cols);

/// A linear layer's forward GEMM [m x k] @ [k x n] (`groups` of them in one grouped launch). In
/// FP8, Transformer Engine first quantises the BF16 activation operand (and keeps its transpose
/// for the weight gradient).
void linear(std::vector<KernelSpec>& k, const std::string& name, double m, double kk, double n,
            DType dtype, std::int64_t groups = 1);

/// Backward of a GEMM (grouped alike): the data gradient and the weight gradient, each as many
/// FLOPs as forward. In FP8 the output gradient [m x n] is quantised (and transposed) first.
void gemm_backward(std::vector<KernelSpec>& k, const std::string& name, double m, double kk,
                   double n, DType dtype, std::int64_t groups = 1);

}  // namespace trainsim
