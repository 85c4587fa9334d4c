#include "sim/cost/recompute_ops.hpp"

#include <initializer_list>
#include <string_view>

#include "sim/cost/kernel_specs.hpp"
#include "sim/cost/moe_ops.hpp"

namespace trainsim {

namespace {

// The name of a decoder kernel without its FP8 cast's suffix ("q_up.fp8_cast" is q_up's).
bool named(const KernelSpec& k, std::initializer_list<std::string_view> names) {
  const std::string_view base = std::string_view(k.name).substr(0, k.name.find('.'));
  for (auto n : names) {
    if (base == n) return true;
  }
  return false;
}

// Whether --recompute selective re-runs a decoder layer's forward kernel: the modules'
// (sim/plan/recompute_modules.hpp), the dense MLP's only on dense layers and the MoE MLP's only
// on MoE layers, as Megatron-Core applies them.
bool recomputed(const KernelSpec& k, std::uint32_t modules, const LayerShape& shape) {
  const auto on = [modules](RecomputeModule m) { return (modules & m) != 0; };
  if (on(kRecomputeCoreAttn) && k.name.starts_with("attention")) return true;
  if (on(kRecomputeLayernorm) && named(k, {"input_norm", "post_attention_norm"})) return true;
  if (on(kRecomputeMlaUpProj) && shape.is_mla() && named(k, {"q_up", "kv_up", "q_proj", "rope"}))
    return true;
  if (!shape.is_moe()) return on(kRecomputeMlp) && named(k, {"mlp_up", "activation", "mlp_down"});
  const bool shared = named(k, {"shared_up", "shared_activation", "shared_down"});
  if (on(kRecomputeMoe) &&
      (shared || named(k, {"router", "permute", "expert_pad", "expert_up", "expert_activation",
                           "expert_down", "expert_unpad", "unpermute"})))
    return true;
  if (on(kRecomputeMoeAct) && named(k, {"expert_activation"})) return true;
  return on(kRecomputeSharedExperts) && shared;
}

// The TP collectives a recomputed part of a layer runs again: with sequence parallelism
// `gathers` all-gathers of its input (and, with `scatter`, the reduce-scatter of its output),
// without it `reduces` all-reduces.
void tp_again(const LayerShape& shape, std::int64_t gathers, bool scatter, std::int64_t reduces,
              BlockPass& out) {
  if (shape.tp <= 1) return;
  const double T = shape.tokens, h = shape.hidden, e = shape.act_bytes;
  if (shape.sp) {
    const double gathered = shape.gemm_dtype == DType::kFP8 ? 1.0 : e;
    for (std::int64_t i = 0; i < gathers; ++i) {
      add_collective(out.collectives, {CollectiveKind::kAllGather, Dim::kTP, T * h * gathered, 1});
    }
    if (scatter) {
      add_collective(out.collectives, {CollectiveKind::kReduceScatter, Dim::kTP, T * h * e, 1});
    }
  } else {
    for (std::int64_t i = 0; i < reduces; ++i) {
      add_collective(out.collectives, {CollectiveKind::kAllReduce, Dim::kTP, T * h * e, 1});
    }
  }
}

}  // namespace

BlockPass op_recompute(const BlockPass& fwd, const LayerShape& shape) {
  BlockPass out;
  for (const auto& k : fwd.kernels) {
    if (k.name.starts_with("attention")) continue;
    if (k.kind == KernelKind::kElementwise || named(k, {"out_proj"})) out.kernels.push_back(k);
  }
  const double T = shape.tokens, h = shape.hidden;
  out.kernels.push_back(gemm("k_proj", T, h, shape.kv, shape.gemm_dtype));
  if (shape.up_factor > 1.0) {
    out.kernels.push_back(gemm("mlp_up.w3", T, h, shape.ffn, shape.gemm_dtype));
  } else {
    out.kernels.push_back(gemm("mlp_down", T, shape.ffn, h, shape.gemm_dtype));
  }
  tp_again(shape, 2, false, 1, out);
  for (const auto& c : fwd.collectives) {
    if (is_context_dim(c.dim) && !c.alongside) add_collective(out.collectives, c);
  }
  return out;
}

BlockPass selective_recompute(const BlockPass& fwd, const LayerShape& shape, const Plan& plan) {
  BlockPass out;
  for (const auto& k : fwd.kernels) {
    if (recomputed(k, plan.recompute_modules, shape)) out.kernels.push_back(k);
  }
  if ((plan.recompute_modules & kRecomputeCoreAttn) != 0) {
    // Under context parallelism the attention core crosses the CP group again: the ring
    // exchange beside its steps, or the all-gather or all-to-alls around it.
    for (const auto& c : fwd.collectives) {
      if (is_context_dim(c.dim)) add_collective(out.collectives, c);
    }
    for (const auto& o : fwd.overlaps) {
      if (is_context_dim(o.dim)) out.overlaps.push_back(o);
    }
  }
  if (!shape.is_moe() && (plan.recompute_modules & kRecomputeMlp) != 0) {
    tp_again(shape, 1, true, 1, out);
  }
  if (shape.is_moe()) {
    const bool moe = (plan.recompute_modules & kRecomputeMoe) != 0;
    const bool shared = moe || (plan.recompute_modules & kRecomputeSharedExperts) != 0;
    moe_recompute_collectives(shape, moe, shared, out);
  }
  return out;
}

}  // namespace trainsim
