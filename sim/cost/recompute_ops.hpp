#pragma once
// What --recompute selective re-runs of a decoder layer before its backward, module by module
// (sim/plan/recompute_modules.hpp), as Megatron-Core's checkpointing does.
#include <string>
#include <vector>

#include "sim/cost/layer_ops.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// The selective recomputation of one decoder layer from its forward pass: its modules' kernels,
/// the attention core with its context-parallel exchange (as Transformer Engine re-runs it);
/// a recomputed dense MLP its TP collectives again (the input gathered and the output
/// reduce-scattered with sequence parallelism, else the output all-reduced); a recomputed MoE
/// MLP sends its tokens to their experts and back again, with their expert-TP gather and
/// scatter; a recomputed shared expert (alone or in the MoE MLP) its TP collectives.
BlockPass selective_recompute(const BlockPass& fwd, const LayerShape& shape, const Plan& plan);

/// One matmul (aten.mm) of a decoder layer's forward on one TP rank, [m x k] x [k x n], in the
/// order torchtitan's modules run them: the attention's projections (wq, wk, wv, wo; MLA's wq_a,
/// wq_b, wkv_a, wkv_b, wo), then a dense MLP's w1, w3, w2, or an MoE layer's router gate and its
/// shared expert's w1, w3, w2 (the routed experts' grouped GEMMs are not aten.mm). `name` is
/// the forward's GEMM of that name, or a piece of a fused one ("k_proj" of qkv_proj,
/// "mlp_up.w3"); torchtitan's per-operator policy keeps the outputs of the first, third, fifth
/// ... (`saved`): m x n elements.
struct LayerMatmul {
  std::string name;
  double m = 0, k = 0, n = 0;
  DType dtype = DType::kBF16;
  bool saved = false;
};
std::vector<LayerMatmul> op_checkpoint_matmuls(const LayerShape& shape);

/// What torchtitan's per-operator checkpointing (--recompute op) re-runs of a decoder layer
/// before its backward. Its policy keeps the outputs of the attention kernel, of the
/// reduce-scatters and all-to-alls, and of every other matmul in forward order (a Llama layer's
/// wq, wv, w1, w2; the count restarts at each layer: op_checkpoint_matmuls) and recomputes the
/// rest: the other matmuls (wk, wo, and w3 of a gated MLP or w2 of a plain one), the routed
/// experts' grouped GEMMs, every element-wise kernel (norms, RoPE, the activation, routing and
/// permutation, the residual adds, FP8 casts), the sequence-parallel and expert all-gathers (the
/// all-reduces without SP, but the layer's last), and the context-parallel collectives whose
/// outputs the attention's backward reads (all but the ring exchange, whose backward runs its own
/// ring).
BlockPass op_recompute(const BlockPass& fwd, const LayerShape& shape);

}  // namespace trainsim
