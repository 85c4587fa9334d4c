#include "sim/cost/mtp_ops.hpp"

#include <string>

#include "sim/cost/kernel_specs.hpp"
#include "sim/cost/vocab_ops.hpp"

namespace trainsim {

// The embedding of the tokens ahead, the norms of that embedding and of the hidden states,
// their concatenation projected from 2h to h by a column-parallel linear whose output is
// gathered back whole, and the module's final norm. With sequence parallelism the projection's
// input is all-gathered first and its gradient reduce-scattered; without, its input gradient is
// all-reduced. The embedding's calls are the model embedding's (sim/cost/vocab_ops.hpp). Every
// collective runs after the kernels.
void mtp_module(const LayerShape& s, BlockPass& p, bool backward) {
  const double T = s.tokens, h = s.hidden, e = s.act_bytes, S = s.sharded_tokens();
  const double per_rank = h / static_cast<double>(s.tp);
  const std::string norm = to_string(s.norm);
  auto& k = p.kernels;
  if (!backward) {
    k.push_back(elementwise("embedding", "embedding", T, h));
    k.push_back(elementwise("enorm", norm, S, h));
    k.push_back(elementwise("hnorm", norm, S, h));
    linear(k, "eh_proj", T, 2.0 * h, per_rank, s.gemm_dtype);
    k.push_back(elementwise("final_norm", norm, S, h));
    if (s.tp > 1) {
      tp_after(p, embedding_output_call(s), T * h * e);  // the model's embedding's call
      if (s.sp) tp_after(p, CollectiveKind::kAllGather, T * 2.0 * h * e);
      tp_after(p, CollectiveKind::kAllGather, T * h * e);  // the projection's output, whole
    }
    return;
  }
  k.push_back(elementwise("final_norm.grad", norm + ".grad", S, h));
  gemm_backward(k, "eh_proj", T, 2.0 * h, per_rank, s.gemm_dtype);
  k.push_back(elementwise("enorm.grad", norm + ".grad", S, h));
  k.push_back(elementwise("hnorm.grad", norm + ".grad", S, h));
  k.push_back(elementwise("embedding.grad", "embedding.grad", T, h));
  if (s.tp > 1) {
    tp_after(p, s.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
             T * 2.0 * h * e);
    if (s.sp) tp_after(p, CollectiveKind::kAllGather, T * h * e);  // the embedding's gradient
  }
}

}  // namespace trainsim
