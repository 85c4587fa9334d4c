#include "sim/cost/vocab_ops.hpp"

#include <string>

#include "sim/cost/kernel_specs.hpp"

namespace trainsim {

namespace {

// Each rank looks up only its vocabulary rows and the partial outputs are summed
// (embedding_output_call); with sequence parallelism the backward all-gathers the output
// gradient first.
void embedding(bool backward, const LayerShape& s, BlockPass& p) {
  const double T = s.tokens, h = s.hidden, e = s.act_bytes;
  if (backward) {
    if (s.hidden_dropout) {
      p.kernels.push_back(
          elementwise("embedding_dropout.grad", "dropout.grad", s.sharded_tokens(), h));
    }
    if (s.tp > 1 && s.sp) tp_after(p, CollectiveKind::kAllGather, T * h * e);
    // Scatter-add of the output gradient into the (fp32) embedding gradient rows.
    p.kernels.push_back(elementwise("embedding.grad", "embedding.grad", T, h));
    return;
  }
  p.kernels.push_back(elementwise("embedding", "embedding", T, h));
  if (s.tp > 1) tp_after(p, embedding_output_call(s), T * h * e);
  // Hidden dropout on the embedding's output (its sequence-parallel part with SP).
  if (s.hidden_dropout) {
    p.kernels.push_back(elementwise("embedding_dropout", "dropout", s.sharded_tokens(), h));
  }
}

// Megatron-Core's output layer is its own ColumnParallelLinear, not a Transformer Engine
// module (no userbuffers overlap), and runs outside the FP8 autocast of the decoder: BF16 in
// FP8 runs too. With sequence parallelism its forward all-gathers the input before the GEMM;
// its backward gathers it again beside the input-gradient GEMM, for the weight gradient, and
// posts the input gradient's call beside the weight-gradient GEMM
// (LinearWithGradAccumulationAndAsyncCommunication).
void lm_head(bool backward, const LayerShape& s, BlockPass& p) {
  const double T = s.tokens, h = s.hidden, e = s.act_bytes;
  if (!backward) {
    if (s.tp > 1 && s.sp) tp_after(p, CollectiveKind::kAllGather, T * h * e);
    p.kernels.push_back(gemm("lm_head", T, h, s.vocab, DType::kBF16));
    return;
  }
  gemm_backward(p.kernels, "lm_head", T, h, s.vocab, DType::kBF16);
  if (s.tp > 1) column_linear_backward_calls(p, s, "lm_head", T * h * e, T * h * e);
}

}  // namespace

CollectiveKind embedding_output_call(const LayerShape& s) {
  return s.sp && !s.learned_positions ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
}

void vocab_block(BlockKind kind, bool backward, const LayerShape& s, BlockPass& p) {
  const double T = s.tokens;
  switch (kind) {
    case BlockKind::kEmbedding:
      embedding(backward, s, p);
      break;
    case BlockKind::kLmHead:
      lm_head(backward, s, p);
      break;
    case BlockKind::kCast:
      // nanotron's cast_to_fp32 block: BF16 logits in, fp32 logits out (and back for the grad).
      p.kernels.push_back(elementwise(backward ? "cast.grad" : "cast",
                                      backward ? "cast.grad" : "cast", T, s.vocab));
      break;
    case BlockKind::kLoss:
      if (backward) {
        // Read the saved fp32 softmax, write the logits gradient.
        p.kernels.push_back(elementwise("cross_entropy.grad", "cross_entropy.grad", T, s.vocab));
      } else {
        // Read the logits twice (max, then exp-sum), write the fp32 softmax.
        p.kernels.push_back(elementwise("cross_entropy", "cross_entropy", T, s.vocab));
        // Vocabulary-parallel cross-entropy: all-reduces of the max, the sum and the target logit.
        if (s.tp > 1) tp_after(p, CollectiveKind::kAllReduce, T * 4.0, 3);
      }
      break;
    default:
      break;  // the decoder-side blocks (layer_ops.cpp)
  }
}

BlockPass lm_head_deferring_backward(const LayerShape& s) {
  BlockPass p;
  gemm_backward(p.kernels, "lm_head", s.tokens, s.hidden, s.vocab, DType::kBF16);
  std::erase_if(p.kernels, [](const KernelSpec& k) { return k.name.ends_with(".wgrad"); });
  if (s.tp > 1) tp_after(p, column_input_gradient_call(s), s.tokens * s.hidden * s.act_bytes);
  return p;
}

BlockPass lm_head_flush(const LayerShape& s) {
  BlockPass p;
  gemm_backward(p.kernels, "lm_head", s.tokens, s.hidden, s.vocab, DType::kBF16);
  std::erase_if(p.kernels, [](const KernelSpec& k) { return !k.name.ends_with(".wgrad"); });
  if (s.tp > 1 && s.sp) {
    tp_beside(p, CollectiveKind::kAllGather, s.tokens * s.hidden * s.act_bytes, "lm_head.wgrad");
  }
  return p;
}

}  // namespace trainsim
