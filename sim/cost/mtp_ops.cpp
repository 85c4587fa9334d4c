#include "sim/cost/mtp_ops.hpp"

#include <string>

#include "sim/cost/kernel_specs.hpp"
#include "sim/cost/vocab_ops.hpp"

namespace trainsim {

// The embedding of the tokens ahead, the norms of that embedding and of the hidden states,
// their concatenation projected from 2h to h, and the module's final norm, as Megatron-Core's
// MultiTokenPredictionLayer runs them (read at d98e8a64). The projection (eh_proj) is Transformer
// Engine's column-parallel linear without userbuffers (its buffer name is not one TE overlaps):
// with sequence parallelism its forward all-gathers the 2h-wide input before the GEMM, and its
// backward gathers it again beside the input-gradient GEMM (in FP8 both gathers carry the
// quantised input, gathered_bytes) and reduce-scatters the input gradient
// beside the weight-gradient GEMM (all-reduces it without sequence parallelism). Its output,
// split over TP (gather_output=False), is gathered whole after it and, with sequence parallelism,
// scattered to the sequence shares (a split forward, an all-gather of the gradient backward).
// The embedding's calls are the model embedding's (sim/cost/vocab_ops.hpp). The calls not
// beside a GEMM run after the pass's kernels.
void mtp_module(const LayerShape& s, BlockPass& p, bool backward) {
  const double T = s.tokens, h = s.hidden, e = s.act_bytes, S = s.sharded_tokens();
  const double per_rank = h / static_cast<double>(s.tp);
  const double a = gathered_bytes(s);  // the projection's gathered input
  const std::string norm = to_string(s.norm);
  const bool tp = s.tp > 1;
  auto& k = p.kernels;
  if (!backward) {
    k.push_back(elementwise("embedding", "embedding", T, h));
    if (tp) tp_after(p, embedding_output_call(s), T * h * e);
    k.push_back(elementwise("enorm", norm, S, h));
    k.push_back(elementwise("hnorm", norm, S, h));
    if (tp && s.sp) tp_after(p, CollectiveKind::kAllGather, T * 2.0 * h * a);  // the input
    linear(k, "eh_proj", T, 2.0 * h, per_rank, s.gemm_dtype);
    if (tp) tp_after(p, CollectiveKind::kAllGather, T * h * e);  // the output, whole
    k.push_back(elementwise("final_norm", norm, S, h));
    return;
  }
  k.push_back(elementwise("final_norm.grad", norm + ".grad", S, h));
  if (tp && s.sp) tp_after(p, CollectiveKind::kAllGather, T * h * e);  // the scatter's gradient
  gemm_backward(k, "eh_proj", T, 2.0 * h, per_rank, s.gemm_dtype);
  if (tp) column_linear_backward_calls(p, s, "eh_proj", T * 2.0 * h * a, T * 2.0 * h * e);
  k.push_back(elementwise("enorm.grad", norm + ".grad", S, h));
  k.push_back(elementwise("hnorm.grad", norm + ".grad", S, h));
  if (tp && s.sp) tp_after(p, CollectiveKind::kAllGather, T * h * e);  // the embedding's gradient
  k.push_back(elementwise("embedding.grad", "embedding.grad", T, h));
}

}  // namespace trainsim
