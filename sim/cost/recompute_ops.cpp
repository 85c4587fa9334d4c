#include "sim/cost/recompute_ops.hpp"

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "sim/cost/kernel_specs.hpp"
#include "sim/cost/moe_ops.hpp"

namespace trainsim {

namespace {

// The name of a decoder kernel without its FP8 cast's suffix ("q_up.fp8_cast" is q_up's).
std::string_view base_name(const KernelSpec& k) {
  return std::string_view(k.name).substr(0, k.name.find('.'));
}

bool named(const KernelSpec& k, std::initializer_list<std::string_view> names) {
  const std::string_view base = base_name(k);
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

std::vector<LayerMatmul> op_checkpoint_matmuls(const LayerShape& s) {
  const double T = s.tokens, h = s.hidden;
  const DType g = s.gemm_dtype;
  std::vector<LayerMatmul> out;
  const auto mm = [&](std::string name, double m, double k, double n, DType dtype) {
    out.push_back({std::move(name), m, k, n, dtype, out.size() % 2 == 0});
  };
  const auto mlp = [&](const std::string& up, const std::string& down, double f) {
    if (s.up_factor > 1.0) {
      mm(up + ".w1", T, h, f, g);
      mm(up + ".w3", T, h, f, g);
    } else {
      mm(up, T, h, f, g);
    }
    mm(down, T, f, h, g);
  };
  if (!s.is_mla()) {
    mm("q_proj", T, h, s.q, g);
    mm("k_proj", T, h, s.kv, g);
    mm("v_proj", T, h, s.kv, g);
  } else if (s.mla.q_lora > 0) {
    mm("q_down", T, h, s.mla.q_lora, g);
    mm("q_up", T, s.mla.q_lora, s.mla.q_up, g);
  } else {
    mm("q_proj", T, h, s.mla.q_up, g);
  }
  if (s.is_mla()) {
    mm("kv_down", T, h, s.mla.kv_lora + s.mla.rope, g);
    mm("kv_up", T, s.mla.kv_lora, s.mla.kv_up, g);
  }
  mm("out_proj", T, s.v, h, g);
  if (!s.is_moe()) {
    mlp("mlp_up", "mlp_down", s.ffn);
    return out;
  }
  mm("router", s.sharded_tokens(), h, static_cast<double>(s.moe.experts), DType::kBF16);
  if (s.moe.shared_ffn > 0) {
    mlp("shared_up", "shared_down", s.moe.shared_ffn);
    if (s.moe.shared_gate) mm("shared_gate", s.sharded_tokens(), h, 1, DType::kBF16);
  }
  return out;
}

BlockPass op_recompute(const BlockPass& fwd, const LayerShape& shape) {
  const std::vector<LayerMatmul> matmuls = op_checkpoint_matmuls(shape);
  std::vector<std::string_view> whole;  // forward GEMMs re-run as they ran
  for (const auto& mm : matmuls) {
    if (!mm.saved) whole.push_back(mm.name);
  }
  whole.insert(whole.end(), {"expert_up", "expert_down"});
  BlockPass out;
  std::vector<std::string_view> ran;
  for (const auto& k : fwd.kernels) {
    if (k.name.starts_with("attention")) continue;
    const std::string_view base = base_name(k);
    const bool again = std::find(whole.begin(), whole.end(), base) != whole.end();
    if (k.kind == KernelKind::kGemm && again) ran.push_back(base);
    if (k.kind == KernelKind::kElementwise || again) out.kernels.push_back(k);
  }
  // Pieces of a fused forward GEMM (wk of qkv_proj, w3 of mlp_up) run as their own.
  for (const auto& mm : matmuls) {
    if (!mm.saved && std::find(ran.begin(), ran.end(), mm.name) == ran.end()) {
      out.kernels.push_back(gemm(mm.name, mm.m, mm.k, mm.n, mm.dtype));
    }
  }
  tp_again(shape, shape.is_moe() ? 1 : 2, false, 1, out);
  if (shape.is_moe()) moe_op_recompute_collectives(shape, out);
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
