#pragma once
// The shapes the microbenchmark suite measures: every kernel shape the cost model produces for
// the catalog's models under tensor parallelism 1, 2, 4 and 8 (the same block_pass() the
// simulator calls, so a measured database hits them exactly), plus log-spaced grids that let the
// simulator interpolate shapes in between.
#include <cstdint>
#include <set>
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

/// The BF16 data-gradient GEMMs of model_shapes() in the nn layout and its weight-gradient GEMMs
/// in the nt layout, as a framework without FP8 runs them (the cost model's GEMMs are tn).
std::vector<KernelShape> model_layout_gemms(const Model& model, std::int64_t tp, std::int64_t mbs,
                                            std::int64_t seq);

/// The weight-gradient GEMMs of model_shapes() accumulating into FP32 (GemmShape::accumulate),
/// as Megatron-LM's gradient-accumulation fusion runs them, in `precision`'s element type.
std::vector<KernelShape> model_accumulating_gemms(const Model& model, std::int64_t tp,
                                                  std::int64_t mbs, std::int64_t seq,
                                                  Precision precision);

/// Powers of two from `lo` to `hi` inclusive (both powers of two, lo <= hi).
std::vector<std::int64_t> pow2_grid(std::int64_t lo, std::int64_t hi);
/// `per_octave` log-spaced values per factor of two from `lo` to `hi` (powers of two): 1 gives
/// pow2_grid(); 2 adds 1.5 x each power of two (768, 1536, ...: the widths models use).
std::vector<std::int64_t> octave_grid(std::int64_t lo, std::int64_t hi, int per_octave);

/// The routed experts of one MoE layer as a recipe sets them up: each token goes to `topk` of
/// `experts` gated (SwiGLU) expert MLPs of width `ffn` on a model of width `hidden`.
struct MoeExperts {
  std::string name;
  std::int64_t hidden = 0;
  std::int64_t ffn = 0;
  std::int64_t experts = 0;
  std::int64_t topk = 0;
  std::string source;
};

/// MoE layers of published models and recipes beyond the catalog (DeepSeek-V3, the Megatron-LM
/// MoE layer test's DeepSeek proxy, Grok-1, Llama 4 Maverick), each with its source.
const std::vector<MoeExperts>& published_moe_layers();

/// The grouped GEMMs of one MoE layer's experts on one GPU under expert parallelism `ep` and
/// expert tensor parallelism `etp`, with `tokens` tokens per GPU entering the layer, balanced
/// routing: experts / ep local experts (the groups), each receiving tokens x topk x ep / experts
/// tokens (after the all-to-all); for each of the two linear layers (gate and up fused, then
/// down) the forward, data-gradient and weight-gradient GEMMs in the cost model's orientation.
/// A single local expert gives plain GEMMs. Empty when the split does not divide. With
/// `accumulate`, each weight gradient is also given accumulating into FP32, after the three.
std::vector<KernelShape> moe_expert_shapes(const MoeExperts& moe, std::int64_t ep, std::int64_t etp,
                                           std::int64_t tokens, DType dtype,
                                           bool accumulate = false);

struct SuiteOptions {
  std::vector<std::int64_t> tps{1, 2, 4, 8};
  std::vector<std::int64_t> gemm_seqs{4096, 8192};  // tokens per micro-batch of the GEMMs
  std::vector<std::int64_t> attention_seqs{1024, 2048, 4096, 8192, 16384, 32768};
  std::vector<Precision> precisions{Precision::kBF16, Precision::kFP8};
  std::int64_t gemm_grid_lo = 512;  // m, n, k of the GEMM grid
  std::int64_t gemm_grid_hi = 16384;
  int gemm_grid_per_octave = 2;
  // BF16 GEMMs also in the nn and nt layouts: the catalog's data and weight gradients, and the
  // grid.
  bool bf16_layouts = true;
  // Weight-gradient GEMMs also accumulating into FP32 (gradient-accumulation fusion): the
  // catalog's and the MoE layers', in each element type, and the grid at powers of two.
  bool accumulating_wgrads = true;
  std::int64_t memory_grid_lo = std::int64_t{1} << 16;  // elements of the memory-bound grid
  std::int64_t memory_grid_hi = std::int64_t{1} << 28;
  // Attention grid beside the catalog: multi-head attention, causal and not, both passes.
  std::vector<std::int64_t> attention_grid_head_dims{64, 128, 192, 256};
  std::vector<std::int64_t> attention_grid_heads{8, 16, 32};
  // FlashAttention's benchmark harness: hidden 2048 (heads = 2048 / head size), batch = 16k
  // tokens / sequence, so that the measured rates compare with its published figures.
  std::vector<std::int64_t> attention_harness_seqs{512, 1024, 2048, 4096, 8192, 16384};
  std::vector<std::int64_t> attention_harness_head_dims{64, 128, 256};
  // Grouped expert GEMMs: the catalog's MoE models and published_moe_layers(), at every expert
  // parallelism that leaves 2 to moe_max_groups local experts (and 1, as plain GEMMs), each
  // expert tensor parallelism, and these tokens per GPU.
  std::vector<std::int64_t> moe_etps{1, 4};
  std::vector<std::int64_t> moe_tokens{2048, 4096, 8192, 16384};
  std::int64_t moe_max_groups = 32;
};

/// The whole suite for `models`: catalog shapes, then the grids; no duplicates, stable order.
std::vector<KernelShape> suite_shapes(const std::vector<Model>& models, const SuiteOptions& opt);

/// Appends `shape` to `out` unless `seen` holds its exact key already (and records it).
void add_unique(std::vector<KernelShape>& out, std::set<std::string>& seen,
                const KernelShape& shape);

/// Shapes between the grid points (offgrid_shapes.cpp), for checking the interpolation on
/// measurements the grids do not hold: `per_family` of each GEMM element type (m, n, k log-uniform
/// over the GEMM grid's range, multiples of 128), of each attention pass, head size and mask (MHA,
/// 4 to 48 heads, sequence a multiple of 256 log-uniform over the attention sequences) and of each
/// memory-bound op (rows x cols log-uniform over the memory grid, cols a multiple of 512 from 1024
/// to 16384; the flat optimizer ops as one row). The same `seed` gives the same shapes on every
/// machine.
std::vector<KernelShape> offgrid_shapes(const SuiteOptions& opt, std::size_t per_family,
                                        std::uint64_t seed);

/// Keeps the shapes whose op_name() is in `ops` (all when `ops` is empty).
std::vector<KernelShape> filter_ops(const std::vector<KernelShape>& shapes,
                                    const std::vector<std::string>& ops);

}  // namespace trainsim::kernels
