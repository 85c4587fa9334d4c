#pragma once
// The shapes the microbenchmark suite measures: every kernel shape the cost model produces for
// the catalog's models under tensor parallelism 1, 2, 4 and 8 (the same block_pass() the
// simulator calls, so a measured database hits them exactly), plus log-spaced grids that let the
// simulator interpolate shapes in between.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/kernel_shape.hpp"

namespace trainsim::kernels {

/// TP divides the attention heads, the KV heads and the FFN width (the plan's feasibility rule).
bool tp_feasible(const Model& model, std::int64_t tp);

/// Every kernel shape of a training step's forward and backward passes of `model` at `tp`, with
/// micro-batch `mbs` and sequence `seq`, in `precision` (the GEMMs' element type), in the order
/// the cost model produces them, duplicates removed. The optimizer's kernels are not included:
/// their size depends on the pipeline split (the grids cover them).
std::vector<KernelShape> model_shapes(const Model& model, std::int64_t tp, std::int64_t mbs,
                                      std::int64_t seq, Precision precision);

/// Powers of two from `lo` to `hi` inclusive (both powers of two, lo <= hi).
std::vector<std::int64_t> pow2_grid(std::int64_t lo, std::int64_t hi);

struct SuiteOptions {
  std::vector<std::int64_t> tps{1, 2, 4, 8};
  std::vector<std::int64_t> gemm_seqs{4096, 8192};  // tokens per micro-batch of the GEMMs
  std::vector<std::int64_t> attention_seqs{1024, 2048, 4096, 8192, 16384, 32768};
  std::vector<Precision> precisions{Precision::kBF16, Precision::kFP8};
  std::int64_t gemm_grid_lo = 512;  // m, n, k of the GEMM grid
  std::int64_t gemm_grid_hi = 16384;
  std::int64_t memory_grid_lo = std::int64_t{1} << 16;  // elements of the memory-bound grid
  std::int64_t memory_grid_hi = std::int64_t{1} << 28;
  std::vector<std::int64_t> attention_grid_head_dims{64, 128};  // MHA grid beside the catalog
  std::vector<std::int64_t> attention_grid_heads{8, 16, 32};
};

/// The whole suite for `models`: catalog shapes, then the grids; no duplicates, stable order.
std::vector<KernelShape> suite_shapes(const std::vector<Model>& models, const SuiteOptions& opt);

/// Keeps the shapes whose op_name() is in `ops` (all when `ops` is empty).
std::vector<KernelShape> filter_ops(const std::vector<KernelShape>& shapes,
                                    const std::vector<std::string>& ops);

}  // namespace trainsim::kernels
