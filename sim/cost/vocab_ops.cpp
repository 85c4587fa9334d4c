#include "sim/cost/vocab_ops.hpp"

#include "sim/cost/kernel_specs.hpp"

namespace trainsim {

namespace {

// `n` tensor-parallel calls of `kind` on `bytes` each, after the pass's kernels.
void tp_after(BlockPass& p, CollectiveKind kind, double bytes, std::int64_t n = 1) {
  add_collective(p.collectives, {kind, Dim::kTP, bytes * static_cast<double>(n), n});
}

void embedding(bool backward, const LayerShape& s, BlockPass& p) {
  const double T = s.tokens, h = s.hidden, e = s.act_bytes;
  if (backward) {
    // Scatter-add of the output gradient into the (fp32) embedding gradient rows.
    p.kernels.push_back(elementwise("embedding.grad", "embedding.grad", T, h));
    return;
  }
  p.kernels.push_back(elementwise("embedding", "embedding", T, h));
  // Each rank looks up only its vocabulary rows; the partial outputs are summed.
  if (s.tp > 1) tp_after(p, CollectiveKind::kAllReduce, T * h * e);
}

// Megatron-Core's output layer is its own ColumnParallelLinear, not a Transformer Engine
// module, and runs outside the FP8 autocast of the decoder: BF16 in FP8 runs too.
void lm_head(bool backward, const LayerShape& s, BlockPass& p) {
  const double T = s.tokens, h = s.hidden, e = s.act_bytes;
  if (backward) {
    gemm_backward(p.kernels, "lm_head", T, h, s.vocab, DType::kBF16);
    if (s.tp > 1) tp_after(p, CollectiveKind::kAllReduce, T * h * e);  // the input gradient
    return;
  }
  p.kernels.push_back(gemm("lm_head", T, h, s.vocab, DType::kBF16));
}

}  // namespace

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

}  // namespace trainsim
