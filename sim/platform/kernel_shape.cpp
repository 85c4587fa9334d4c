#include "sim/platform/kernel_shape.hpp"

namespace trainsim {

const char* to_string(DType dtype) {
  return dtype == DType::kFP8 ? "fp8" : "bf16";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "bf16") return DType::kBF16;
  if (s == "fp8") return DType::kFP8;
  return std::nullopt;
}

const char* to_string(GemmLayout layout) {
  switch (layout) {
    case GemmLayout::kTN:
      return "tn";
    case GemmLayout::kNN:
      return "nn";
    case GemmLayout::kNT:
      return "nt";
  }
  return "?";
}

std::optional<GemmLayout> parse_gemm_layout(std::string_view s) {
  if (s == "tn") return GemmLayout::kTN;
  if (s == "nn") return GemmLayout::kNN;
  if (s == "nt") return GemmLayout::kNT;
  return std::nullopt;
}

const char* to_string(AttentionPass pass) {
  switch (pass) {
    case AttentionPass::kForward:
      return "fwd";
    case AttentionPass::kBackward:
      return "bwd";
    case AttentionPass::kForwardBackward:
      return "fwd+bwd";
  }
  return "?";
}

std::optional<AttentionPass> parse_attention_pass(std::string_view s) {
  if (s == "fwd") return AttentionPass::kForward;
  if (s == "bwd") return AttentionPass::kBackward;
  if (s == "fwd+bwd") return AttentionPass::kForwardBackward;
  return std::nullopt;
}

const std::vector<MemoryOp>& memory_ops() {
  // BF16 activations (2 bytes), fp32 softmax, gradients and optimizer state (4 bytes). Each
  // input read once and each output written once: the fewest bytes the op must move, so that
  // bytes / time never exceeds the memory's bandwidth (a second pass over a row comes from cache;
  // the H100 suite's cross_entropy ran at 3.8 TB/s counted with two reads of the logits).
  static const std::vector<MemoryOp> ops = {
      {"copy", 4, "device-to-device copy: read and write"},
      {"add", 6, "residual add (and its gradient): read two, write one"},
      {"rmsnorm", 4, "read x, write y"},
      {"rmsnorm.grad", 6, "read x and dy, write dx"},
      {"layernorm", 4, "read x, write y"},
      {"layernorm.grad", 6, "read x and dy, write dx"},
      {"rope", 4, "read q and k, write them rotated (cols = q + kv width)"},
      {"rope.grad", 4, "rotate the gradients back"},
      {"swiglu", 6, "read gate and up, write out (cols = output width)"},
      {"swiglu.grad", 10, "read dout, gate and up, write dgate and dup"},
      {"geglu", 6, "read gate and up, write out"},
      {"geglu.grad", 10, "read dout, gate and up, write dgate and dup"},
      {"gelu", 4, "read x, write y"},
      {"gelu.grad", 6, "read x and dy, write dx"},
      {"relu", 4, "read x, write y"},
      {"relu.grad", 6, "read x and dy, write dx"},
      {"squared_relu", 4, "read x, write y"},
      {"squared_relu.grad", 6, "read x and dy, write dx"},
      {"embedding", 4, "gather rows: read the table rows, write the activations"},
      {"embedding.grad", 10, "scatter-add: read dy, read and write fp32 gradient rows"},
      {"cast", 6, "nanotron's cast_to_fp32: read BF16 logits, write fp32 (cols = vocab)"},
      {"cast.grad", 6, "read the fp32 gradient, write it in BF16"},
      {"cross_entropy", 6, "read the logits, write the fp32 softmax (cols = vocab)"},
      {"cross_entropy.grad", 6, "read the fp32 softmax, write the logits gradient"},
      {"grad_norm", 4, "read the fp32 gradients (rows = 1, cols = parameters)"},
      {"adam", 30, "read fp32 grad, master, m, v; write master, m, v and the BF16 weight"},
      {"adam_bf16_moments", 22,
       "--optimizer-state bf16-moments: read fp32 grad and master, BF16 m and v; write them and "
       "the BF16 weight",
       false},
      {"adam_bf16", 14,
       "--optimizer-state bf16: read the BF16 grad, weight, m and v; write the weight, m and v",
       false},
      {"scale_mask_softmax", 4,
       "Megatron-LM's fused scale, causal mask and softmax: read the BF16 scores, write the "
       "probabilities (rows = batch x heads x seq, cols = seq)",
       false},
      {"scale_mask_softmax.grad", 6, "read the probabilities and their gradient, write the scores'",
       false},
      {"dropout", 5,
       "PyTorch's dropout: read the input, write the kept elements scaled and a 1-byte mask (the "
       "attention probabilities: rows = batch x heads x seq, cols = seq)",
       false},
      {"dropout.grad", 5, "read the gradient and the mask, write the gradient of the kept ones",
       false},
      {"dropout_mask", 1,
       "what hidden dropout adds to a fused bias-dropout-add: its 1-byte mask written", false},
      {"fp8_amax", 2,
       "current FP8 scaling's amax of a tensor about to be cast: read it (BF16), write one FP32",
       false},
      {"gate_scale", 4,
       "a shared expert's output scaled by its per-token gate: read the output, write it scaled "
       "(rows = tokens, cols = hidden)",
       false},
      {"gate_scale.grad", 6,
       "read the scaled output's gradient and the output, write the output's gradient (the "
       "gate's, one per token, from the same pass)",
       false},
      {"moe_router",
       6,
       "a mixture-of-experts router's softmax and top-k: read the BF16 logits, write fp32 "
       "probabilities (rows = tokens, cols = experts)",
       true,
       {8, 16, 32, 64, 128, 256},
       1,
       true},
      {"moe_router.grad",
       10,
       "read the probabilities and their gradient, write the logits'",
       true,
       {8, 16, 32, 64, 128, 256},
       1,
       true},
      // The permutation to the experts and back, per routed element (rows = tokens x top-k, cols
      // = hidden), at the suite's top-8: each token's row read (written) once for its 8 rows.
      {"moe_permute",
       2.25,
       "copy each token's hidden state to its rows among the experts', grouped by expert: read "
       "the token once, write its 8 rows",
       true,
       {4096},
       kSuiteTopK},
      {"moe_permute.grad",
       2.25,
       "sum each token's 8 rows of gradient back into one",
       true,
       {4096},
       kSuiteTopK},
      {"moe_unpermute",
       2.25,
       "weigh each expert's output by its router probability and sum a token's 8 rows into one",
       true,
       {4096},
       kSuiteTopK},
      {"moe_unpermute.grad",
       4.25,
       "send each token's gradient to its 8 rows, weighed, and read the rows for the "
       "probabilities' gradient",
       true,
       {4096},
       kSuiteTopK},
      {"fp8_cast", 3,
       "Transformer Engine's quantisation of a GEMM operand used only in its own layout (a "
       "frozen weight's input, which no weight-gradient GEMM reads): read BF16, write FP8 and the "
       "amax"},
      {"fp8_transpose", 2,
       "an FP8 weight's transpose, made once a step for the weight-gradient layout Hopper's FP8 "
       "GEMMs need: read FP8, write FP8"},
      {"fp8_cast_transpose",
       4,
       "Transformer Engine's quantisation of a GEMM operand: read BF16, write FP8 and its FP8 "
       "transpose (the weight-gradient GEMM's layout), and the amax",
       true,
       {4096},
       8},
  };
  return ops;
}

const MemoryOp* find_memory_op(std::string_view name) {
  for (const auto& op : memory_ops()) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

std::string op_name(const KernelShape& shape) {
  if (const auto* g = std::get_if<GemmShape>(&shape))
    return g->groups > 1 ? "grouped_gemm" : "gemm";
  if (std::holds_alternative<AttentionShape>(shape)) return "attention";
  return std::get<MemoryShape>(shape).op;
}

namespace {

double attention_forward_flops(const AttentionShape& a) {
  const double f = 4.0 * static_cast<double>(a.batch) * static_cast<double>(a.seq) *
                   static_cast<double>(a.seq) * static_cast<double>(a.heads) *
                   static_cast<double>(a.head_dim);
  return a.causal ? f / 2.0 : f;
}

}  // namespace

bool is_fp8_gemm(const KernelShape& shape) {
  const auto* g = std::get_if<GemmShape>(&shape);
  return g != nullptr && g->dtype == DType::kFP8;
}

double shape_flops(const KernelShape& shape) {
  if (const auto* g = std::get_if<GemmShape>(&shape)) {
    return 2.0 * static_cast<double>(g->groups) * static_cast<double>(g->m) *
           static_cast<double>(g->k) * static_cast<double>(g->n);
  }
  if (const auto* a = std::get_if<AttentionShape>(&shape)) {
    const double f = attention_forward_flops(*a);
    switch (a->pass) {
      case AttentionPass::kForward:
        return f;
      case AttentionPass::kBackward:
        return 2.5 * f;
      case AttentionPass::kForwardBackward:
        return 3.5 * f;
    }
  }
  return 0.0;
}

double shape_bytes(const KernelShape& shape) {
  constexpr double e = 2.0;  // BF16 activations
  if (const auto* g = std::get_if<GemmShape>(&shape)) {
    const double m = static_cast<double>(g->m), n = static_cast<double>(g->n),
                 k = static_cast<double>(g->k);
    const double c = g->accumulate ? 8.0 : e;  // FP32 C read and D written, or BF16 C written
    return static_cast<double>(g->groups) * ((m * k + k * n) * e + m * n * c);
  }
  if (const auto* a = std::get_if<AttentionShape>(&shape)) {
    // Q, K, V in and O out; the backward pass also reads O and dO and writes dQ, dK, dV.
    const double tokens = static_cast<double>(a->batch) * static_cast<double>(a->seq);
    const double q = static_cast<double>(a->heads * a->head_dim);
    const double kv = static_cast<double>(a->kv_heads * a->head_dim);
    const double once = tokens * (2.0 * q + 2.0 * kv) * e;
    switch (a->pass) {
      case AttentionPass::kForward:
        return once;
      case AttentionPass::kBackward:
        return 2.0 * once;
      case AttentionPass::kForwardBackward:
        return 3.0 * once;
    }
  }
  const auto& mem = std::get<MemoryShape>(shape);
  const MemoryOp* op = find_memory_op(mem.op);
  if (op == nullptr) return 0.0;
  return static_cast<double>(mem.rows) * static_cast<double>(mem.cols) * op->bytes_per_element;
}

std::string shape_label(const KernelShape& shape) {
  // Plain appends: labels key the kernel database's lookups, thousands per run.
  std::string o;
  o.reserve(64);
  auto num = [&o](const char* name, std::int64_t v) {
    o += name;
    o += std::to_string(v);
  };
  if (const auto* g = std::get_if<GemmShape>(&shape)) {
    o += op_name(shape);
    o += ' ';
    o += to_string(g->dtype);
    if (g->layout != GemmLayout::kTN) {
      o += ' ';
      o += to_string(g->layout);
    }
    if (g->accumulate) o += " acc";
    if (g->groups > 1) num(" g=", g->groups);
    num(" m=", g->m);
    num(" n=", g->n);
    num(" k=", g->k);
  } else if (const auto* a = std::get_if<AttentionShape>(&shape)) {
    o += "attention ";
    o += to_string(a->pass);
    o += ' ';
    o += to_string(a->dtype);
    num(" b=", a->batch);
    num(" s=", a->seq);
    num(" h=", a->heads);
    num(" kv=", a->kv_heads);
    num(" d=", a->head_dim);
    o += a->causal ? " causal" : " full";
  } else {
    const auto& m = std::get<MemoryShape>(shape);
    o += m.op;
    num(" rows=", m.rows);
    num(" cols=", m.cols);
  }
  return o;
}

}  // namespace trainsim
