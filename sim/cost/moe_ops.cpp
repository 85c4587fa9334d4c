#include "sim/cost/moe_ops.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "sim/cost/attention_ops.hpp"
#include "sim/cost/kernel_specs.hpp"

namespace trainsim {

namespace {

// What one GPU's MoE MLP moves and computes for a micro-batch.
struct MoeWork {
  double tokens = 0;  // router input: the GPU's hidden states (1/tp of them with SP)
  double routed = 0;  // (token, expert) pairs it dispatches: tokens x top-k
  double rows = 0;    // rows its experts compute, busiest GPU: gathered over expert TP
  double per_expert = 0;
  bool etp_gather = false;  // routed tokens gathered over the expert TP group (expert_tp_dim)
};

MoeWork work_of(const LayerShape& s) {
  MoeWork w;
  const auto& m = s.moe;
  w.tokens = s.sharded_tokens();
  w.routed = w.tokens * m.topk;
  w.etp_gather = experts_gather_tokens(s);
  w.rows = routed_expert_rows(s);
  w.per_expert = w.rows / static_cast<double>(m.local);
  return w;
}

// FP8 grouped GEMMs take each expert's rows in multiples of 16: where an expert's count is not
// one, Megatron-Core's grouped MLP copies the routed tokens into a padded buffer before the
// experts and back out after them (Transformer Engine's Fp8Padding and Fp8Unpadding, which
// return their input when every count is aligned; their gradients the other way). Balanced
// routing (the default, as the recipes' forced load balancing makes it) gives every expert the
// mean; a skewed load gives counts that differ, and so unaligned ones.
constexpr double kFp8RowAlignment = 16;

bool fp8_padded(const LayerShape& s, const MoeWork& w) {
  if (s.gemm_dtype != DType::kFP8) return false;
  if (s.moe.load != 1.0) return true;
  return std::fmod(w.per_expert, kFp8RowAlignment) != 0.0;
}

// How the local experts' MLP is launched. Grouped (--moe-grouped-gemm): each kernel once over all
// of them. Sequential (Megatron-Core's SequentialMLP): the same kernels once per local expert
// over its own rows, and the experts' outputs concatenated after them (their gradients split
// back by a copy before them); one local expert runs as grouped.
struct ExpertLaunches {
  std::int64_t groups;    // GEMM groups per launch
  std::int64_t launches;  // launches of each kernel per pass
  double rows;            // rows of the elementwise kernels per launch
  bool concat() const { return launches > 1; }
};

ExpertLaunches launches_of(const LayerShape& s, const MoeWork& w) {
  if (s.moe.grouped || s.moe.local == 1) return {s.moe.local, 1, w.rows};
  return {1, s.moe.local, w.per_expert};
}

// The alltoall dispatcher receives its local experts' rows grouped by source GPU and sorts them
// by local expert before the experts (Megatron-Core's permutation 2, sort_chunks_by_idxs, or a
// transpose with a capacity), restoring the order after them: one copy of the received rows
// each way, and their gradients back. One local expert needs none, nor the all-gather
// dispatcher, whose permutation already groups the tokens by local expert.
bool sorted_by_local_expert(const LayerShape& s) {
  return s.moe.dispatcher == MoeDispatcher::kAllToAll && s.moe.local > 1;
}

// Each kernel added from `first` on launched `times` per pass.
void repeat_from(std::vector<KernelSpec>& k, std::size_t first, std::int64_t times) {
  for (std::size_t i = first; i < k.size(); ++i) k[i].launches *= times;
}

// The layer's GEMMs and attention of a pass, by kernel name: what an overlapped all-to-all runs
// beside (sim/cost/tp_overlap: it stalls the pass only where it outlasts them).
std::vector<std::string> layer_compute(const LayerShape& s, bool backward) {
  std::vector<std::string> gemms = attention_in_gemms(s);
  gemms.insert(gemms.end(), {"out_proj", "expert_up", "expert_down"});
  if (s.moe.shared_ffn > 0) gemms.insert(gemms.end(), {"shared_up", "shared_down"});
  std::vector<std::string> out;
  for (const auto& g : gemms) {
    if (backward) {
      out.push_back(g + ".dgrad");
      out.push_back(g + ".wgrad");
    } else {
      out.push_back(g);
    }
  }
  out.push_back(backward ? "attention.grad" : "attention");
  return out;
}

// The dispatch and the combine, each way. All-to-all: the routed tokens over EP (the busiest
// GPU receives `load` times the mean) and, with expert TP, gathered over the expert TP group
// before the experts and their outputs reduce-scattered after; with
// --overlap-moe-expert-parallel-comm the all-to-alls run beside the layer's compute. All-gather:
// every token's hidden state gathered over expert TP and EP, the outputs reduce-scattered back.
void moe_collectives(const LayerShape& s, const MoeWork& w, BlockPass& p, bool backward) {
  const double h = s.hidden, e = s.act_bytes;
  const auto& m = s.moe;
  const auto both_ways = [&p](Dim d, double gathered) {
    add_collective(p.collectives, {CollectiveKind::kAllGather, d, gathered, 1});
    add_collective(p.collectives, {CollectiveKind::kReduceScatter, d, gathered, 1});
  };
  const double etp = w.etp_gather ? static_cast<double>(m.etp) : 1.0;
  const Dim etp_dim = expert_tp_dim(s);
  if (m.dispatcher == MoeDispatcher::kAllGather) {
    if (w.etp_gather) both_ways(etp_dim, etp * w.tokens * h * e);
    if (m.ep > 1) both_ways(Dim::kEP, static_cast<double>(m.ep) * etp * w.tokens * h * e);
    return;
  }
  if (m.ep > 1) {
    const double bytes = 2.0 * w.routed * h * e * m.load;
    add_collective(p.collectives, {CollectiveKind::kAllToAll, Dim::kEP, bytes, 2, m.a2a_overlap});
    if (m.a2a_overlap) {
      p.overlaps.push_back({CollectiveKind::kAllToAll, bytes, layer_compute(s, backward),
                            OverlapMethod::kBulk, Dim::kEP});
    }
  }
  if (w.etp_gather) both_ways(etp_dim, w.rows * h * e);
}

// The shared expert: a dense gated MLP every token passes through beside the routed experts,
// tensor-parallel like a dense MLP (column-parallel up, row-parallel down) on all the layer's
// tokens: with sequence parallelism its input gathered over TP and its output
// reduce-scattered, else its output all-reduced.
void shared_expert_collectives(const LayerShape& s, BlockPass& p) {
  const double T = s.tokens, h = s.hidden, e = s.act_bytes;
  if (s.tp == 1) return;
  if (!s.sp) {
    add_collective(p.collectives, {CollectiveKind::kAllReduce, Dim::kTP, T * h * e, 1});
    return;
  }
  add_collective(p.collectives, {CollectiveKind::kAllGather, Dim::kTP, T * h * e, 1});
  add_collective(p.collectives, {CollectiveKind::kReduceScatter, Dim::kTP, T * h * e, 1});
}

// Qwen2-MoE's gate on the shared expert's output (Megatron-Core's SharedExpertMLP with a gate):
// per token a sigmoid of the layer input times a [1, hidden] weight (a GEMV, replicated over TP
// on the GPU's own tokens), the output scaled by it; backward, the output's and the gate's
// gradients from one pass over the output and its gradient, then the GEMV's two.
void shared_expert_gate(const LayerShape& s, std::vector<KernelSpec>& k, bool backward) {
  const double rows = s.sharded_tokens(), h = s.hidden;
  if (backward) {
    k.push_back(elementwise("shared_gate.scale.grad", "gate_scale.grad", rows, h));
    gemm_backward(k, "shared_gate", rows, h, 1, DType::kBF16);
  } else {
    k.push_back(gemm("shared_gate", rows, h, 1, DType::kBF16));
    k.push_back(elementwise("shared_gate.scale", "gate_scale", rows, h));
  }
}

void shared_expert(const LayerShape& s, BlockPass& p, bool backward) {
  const double T = s.tokens, h = s.hidden, f = s.moe.shared_ffn;
  auto& k = p.kernels;
  const std::string act = to_string(s.ffn_kind);
  if (backward) {
    if (s.moe.shared_gate) shared_expert_gate(s, k, true);
    gemm_backward(k, "shared_down", T, f, h, s.gemm_dtype);
    k.push_back(elementwise("shared_activation.grad", act + ".grad", T, f));
    gemm_backward(k, "shared_up", T, h, s.up_factor * f, s.gemm_dtype);
  } else {
    linear(k, "shared_up", T, h, s.up_factor * f, s.gemm_dtype);
    k.push_back(elementwise("shared_activation", act, T, f));
    linear(k, "shared_down", T, f, h, s.gemm_dtype);
    if (s.moe.shared_gate) shared_expert_gate(s, k, false);
  }
  shared_expert_collectives(s, p);
}

}  // namespace

void moe_forward(const LayerShape& s, BlockPass& p) {
  const MoeWork w = work_of(s);
  const auto& m = s.moe;
  const double h = s.hidden, experts = static_cast<double>(m.experts);
  auto& k = p.kernels;
  k.push_back(gemm("router", w.tokens, h, experts, DType::kBF16));
  k.push_back(elementwise("router.topk", "moe_router", w.tokens, experts));
  k.push_back(elementwise("permute", "moe_permute", w.routed, h));
  const bool sorted = sorted_by_local_expert(s);
  if (sorted) k.push_back(elementwise("expert_sort", "copy", w.rows, h));
  if (fp8_padded(s, w)) k.push_back(elementwise("expert_pad", "copy", w.rows, h));
  const ExpertLaunches x = launches_of(s, w);
  const std::size_t first = k.size();
  linear(k, "expert_up", w.per_expert, h, s.up_factor * m.ffn, s.gemm_dtype, x.groups);
  k.push_back(elementwise("expert_activation", to_string(s.ffn_kind), x.rows, m.ffn));
  linear(k, "expert_down", w.per_expert, m.ffn, h, s.gemm_dtype, x.groups);
  repeat_from(k, first, x.launches);
  if (x.concat()) k.push_back(elementwise("expert_concat", "copy", w.rows, h));
  if (fp8_padded(s, w)) k.push_back(elementwise("expert_unpad", "copy", w.rows, h));
  if (sorted) k.push_back(elementwise("expert_unsort", "copy", w.rows, h));
  k.push_back(elementwise("unpermute", "moe_unpermute", w.routed, h));
  moe_collectives(s, w, p, false);
  if (m.shared_ffn > 0) shared_expert(s, p, false);
}

void moe_recompute_collectives(const LayerShape& s, bool routed, bool shared, BlockPass& p) {
  if (routed) moe_collectives(s, work_of(s), p, false);
  if (shared && s.moe.shared_ffn > 0) shared_expert_collectives(s, p);
}

void moe_op_recompute_collectives(const LayerShape& s, BlockPass& p) {
  BlockPass all;
  moe_recompute_collectives(s, true, true, all);
  for (const auto& c : all.collectives) {
    if (c.kind == CollectiveKind::kAllGather || c.kind == CollectiveKind::kAllReduce) {
      add_collective(p.collectives, c);
    }
  }
}

void moe_backward(const LayerShape& s, BlockPass& p) {
  const MoeWork w = work_of(s);
  const auto& m = s.moe;
  const double h = s.hidden, experts = static_cast<double>(m.experts);
  auto& k = p.kernels;
  if (m.shared_ffn > 0) shared_expert(s, p, true);
  k.push_back(elementwise("unpermute.grad", "moe_unpermute.grad", w.routed, h));
  const bool sorted = sorted_by_local_expert(s);
  if (sorted) k.push_back(elementwise("expert_unsort.grad", "copy", w.rows, h));
  if (fp8_padded(s, w)) k.push_back(elementwise("expert_unpad.grad", "copy", w.rows, h));
  const ExpertLaunches x = launches_of(s, w);
  if (x.concat()) k.push_back(elementwise("expert_concat.grad", "copy", w.rows, h));
  const std::size_t first = k.size();
  gemm_backward(k, "expert_down", w.per_expert, m.ffn, h, s.gemm_dtype, x.groups);
  k.push_back(elementwise("expert_activation.grad", std::string(to_string(s.ffn_kind)) + ".grad",
                          x.rows, m.ffn));
  gemm_backward(k, "expert_up", w.per_expert, h, s.up_factor * m.ffn, s.gemm_dtype, x.groups);
  repeat_from(k, first, x.launches);
  if (fp8_padded(s, w)) k.push_back(elementwise("expert_pad.grad", "copy", w.rows, h));
  if (sorted) k.push_back(elementwise("expert_sort.grad", "copy", w.rows, h));
  k.push_back(elementwise("permute.grad", "moe_permute.grad", w.routed, h));
  k.push_back(elementwise("router.topk.grad", "moe_router.grad", w.tokens, experts));
  gemm_backward(k, "router", w.tokens, h, experts, DType::kBF16);
  moe_collectives(s, w, p, true);
}

}  // namespace trainsim
