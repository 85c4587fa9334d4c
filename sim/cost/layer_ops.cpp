#include "sim/cost/layer_ops.hpp"

namespace trainsim {

LayerShape layer_shape(const Model& model, const Plan& plan, std::int64_t padded_vocab) {
  LayerShape s;
  const double t = static_cast<double>(plan.tp);
  s.tp = plan.tp;
  s.seq = static_cast<double>(plan.seq_len);
  s.tokens = static_cast<double>(plan.mbs) * s.seq;
  s.hidden = static_cast<double>(model.hidden_size);
  s.q = static_cast<double>(model.q_size()) / t;
  s.kv = static_cast<double>(model.kv_size()) / t;
  double ffn = static_cast<double>(model.ffn_hidden_size);
  if (model.moe.is_moe()) {
    // Without expert parallelism every rank runs the top-k experts' share of each token.
    ffn = static_cast<double>(model.moe.expert_ffn_hidden_size * model.moe.experts_per_token);
  }
  s.ffn = ffn / t;
  s.up_factor = is_gated(model.ffn_kind) ? 2.0 : 1.0;
  s.vocab = static_cast<double>(padded_vocab) / t;
  s.rope = model.position_embedding == PositionEmbedding::kRope;
  s.sp = plan.sp;
  return s;
}

namespace {

// A GEMM [m x k] @ [k x n]: 2mkn FLOPs; reads both operands and writes the result.
KernelSpec gemm(std::string name, double m, double k, double n, double elem) {
  return {std::move(name), KernelKind::kGemm, 2.0 * m * k * n, (m * k + k * n + m * n) * elem};
}

KernelSpec elementwise(std::string name, double bytes) {
  return {std::move(name), KernelKind::kElementwise, 0.0, bytes};
}

void decoder_forward(const LayerShape& s, BlockPass& p) {
  const double T = s.tokens, h = s.hidden, e = s.act_bytes, S = s.sharded_tokens();
  const double qkv = s.q + 2.0 * s.kv;
  auto& k = p.kernels;
  k.push_back(elementwise("input_norm", 2.0 * S * h * e));
  k.push_back(gemm("qkv_proj", T, h, qkv, e));
  if (s.rope) k.push_back(elementwise("rope", 2.0 * T * (s.q + s.kv) * e));
  // Causal flash attention: QK^T and AV over the unmasked half of the s x s scores.
  k.push_back({"attention", KernelKind::kAttention, 2.0 * T * s.seq * s.q,
               T * (2.0 * s.q + 2.0 * s.kv) * e});
  k.push_back(gemm("out_proj", T, s.q, h, e));
  k.push_back(elementwise("residual_add", 3.0 * S * h * e));
  k.push_back(elementwise("post_attention_norm", 2.0 * S * h * e));
  k.push_back(gemm("mlp_up", T, h, s.up_factor * s.ffn, e));
  k.push_back(elementwise("activation", (s.up_factor + 1.0) * T * s.ffn * e));
  k.push_back(gemm("mlp_down", T, s.ffn, h, e));
  k.push_back(elementwise("residual_add", 3.0 * S * h * e));
  if (s.tp > 1) p.tp_allreduce.add(T * h * e, 2);  // after out_proj and after mlp_down
}

// Backward of a GEMM: the data gradient and the weight gradient, each as many FLOPs as forward.
void gemm_backward(std::vector<KernelSpec>& k, const std::string& name, double m, double kk,
                   double n, double e) {
  k.push_back(gemm(name + ".dgrad", m, n, kk, e));
  k.push_back(gemm(name + ".wgrad", kk, m, n, e));
}

void decoder_backward(const LayerShape& s, BlockPass& p) {
  const double T = s.tokens, h = s.hidden, e = s.act_bytes, S = s.sharded_tokens();
  const double qkv = s.q + 2.0 * s.kv;
  auto& k = p.kernels;
  k.push_back(elementwise("residual_add.grad", 3.0 * S * h * e));
  gemm_backward(k, "mlp_down", T, s.ffn, h, e);
  k.push_back(elementwise("activation.grad", (2.0 * s.up_factor + 1.0) * T * s.ffn * e));
  gemm_backward(k, "mlp_up", T, h, s.up_factor * s.ffn, e);
  k.push_back(elementwise("post_attention_norm.grad", 3.0 * S * h * e));
  k.push_back(elementwise("residual_add.grad", 3.0 * S * h * e));
  gemm_backward(k, "out_proj", T, s.q, h, e);
  // FlashAttention's backward does 2.5x the forward FLOPs (its benchmark convention).
  k.push_back({"attention.grad", KernelKind::kAttention, 2.5 * 2.0 * T * s.seq * s.q,
               T * (4.0 * s.q + 4.0 * s.kv) * e});
  if (s.rope) k.push_back(elementwise("rope.grad", 2.0 * T * (s.q + s.kv) * e));
  gemm_backward(k, "qkv_proj", T, h, qkv, e);
  k.push_back(elementwise("input_norm.grad", 3.0 * S * h * e));
  if (s.tp > 1) p.tp_allreduce.add(T * h * e, 2);  // input grads of qkv_proj and mlp_up
}

}  // namespace

BlockPass block_pass(BlockKind block, bool backward, const LayerShape& s) {
  BlockPass p;
  const double T = s.tokens, h = s.hidden, e = s.act_bytes, S = s.sharded_tokens();
  const bool tp = s.tp > 1;
  switch (block) {
    case BlockKind::kDecoder:
      if (backward) {
        decoder_backward(s, p);
      } else {
        decoder_forward(s, p);
      }
      break;
    case BlockKind::kEmbedding:
      if (backward) {
        // Scatter-add of the output gradient into the (fp32) embedding gradient rows.
        p.kernels.push_back(elementwise("embedding.grad", T * h * (e + 4.0 + 4.0)));
      } else {
        p.kernels.push_back(elementwise("embedding", 2.0 * T * h * e));
        // Each rank looks up only its vocabulary rows; the partial outputs are summed.
        if (tp) p.tp_allreduce.add(T * h * e);
      }
      break;
    case BlockKind::kFinalNorm:
      p.kernels.push_back(elementwise(backward ? "final_norm.grad" : "final_norm",
                                      (backward ? 3.0 : 2.0) * S * h * e));
      break;
    case BlockKind::kLmHead:
      if (backward) {
        gemm_backward(p.kernels, "lm_head", T, h, s.vocab, e);
        if (tp) p.tp_allreduce.add(T * h * e);  // the LM head input gradient
      } else {
        p.kernels.push_back(gemm("lm_head", T, h, s.vocab, e));
      }
      break;
    case BlockKind::kCast:
      // nanotron's cast_to_fp32 block: BF16 logits in, fp32 logits out (and back for the grad).
      p.kernels.push_back(elementwise(backward ? "cast.grad" : "cast", T * s.vocab * (e + 4.0)));
      break;
    case BlockKind::kLoss:
      if (backward) {
        // Read the saved fp32 softmax, write the logits gradient.
        p.kernels.push_back(elementwise("cross_entropy.grad", T * s.vocab * (4.0 + e)));
      } else {
        // Read the logits twice (max, then exp-sum), write the fp32 softmax.
        p.kernels.push_back(elementwise("cross_entropy", T * s.vocab * (2.0 * e + 4.0)));
        // Vocabulary-parallel cross-entropy: all-reduces of the max, the sum and the target logit.
        if (tp) p.tp_allreduce.add(T * 4.0, 3);
      }
      break;
  }
  return p;
}

}  // namespace trainsim
