#include "kernels/host/shapes.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "sim/cost/layer_ops.hpp"
#include "sim/plan/vocab.hpp"
#include "sim/platform/kernel_db.hpp"

namespace trainsim::kernels {

namespace {

void add_unique(std::vector<KernelShape>& out, std::set<std::string>& seen,
                const KernelShape& shape) {
  if (seen.insert(exact_key(shape)).second) out.push_back(shape);
}

}  // namespace

bool tp_feasible(const Model& model, std::int64_t tp) {
  const std::int64_t ffn =
      model.moe.is_moe() ? model.moe.expert_ffn_hidden_size : model.ffn_hidden_size;
  return tp >= 1 && model.num_attention_heads % tp == 0 && model.num_kv_heads % tp == 0 &&
         ffn % tp == 0;
}

std::vector<KernelShape> model_shapes(const Model& model, std::int64_t tp, std::int64_t mbs,
                                      std::int64_t seq, Precision precision) {
  Plan plan;
  plan.tp = tp;
  plan.mbs = mbs;
  plan.seq_len = seq;
  plan.precision = precision;
  const auto padded = padded_vocab(model.vocab_size, plan.vocab_multiple(), tp);
  const LayerShape shape = layer_shape(model, plan, padded);
  std::vector<KernelShape> out;
  std::set<std::string> seen;
  for (BlockKind block : {BlockKind::kEmbedding, BlockKind::kDecoder, BlockKind::kFinalNorm,
                          BlockKind::kLmHead, BlockKind::kLoss}) {
    for (bool backward : {false, true}) {
      for (const auto& k : block_pass(block, backward, shape).kernels) {
        add_unique(out, seen, k.shape);
      }
    }
  }
  return out;
}

std::vector<std::int64_t> pow2_grid(std::int64_t lo, std::int64_t hi) {
  auto pow2 = [](std::int64_t x) { return x > 0 && (x & (x - 1)) == 0; };
  if (!pow2(lo) || !pow2(hi) || lo > hi) {
    throw std::invalid_argument("pow2_grid: bounds must be powers of two, lo <= hi");
  }
  std::vector<std::int64_t> out;
  for (std::int64_t x = lo; x <= hi; x *= 2) out.push_back(x);
  return out;
}

std::vector<KernelShape> suite_shapes(const std::vector<Model>& models, const SuiteOptions& opt) {
  std::vector<KernelShape> out;
  std::set<std::string> seen;
  // Catalog: GEMMs and memory-bound ops at the GEMM sequence lengths, attention at its own.
  for (const auto& m : models) {
    for (auto tp : opt.tps) {
      if (!tp_feasible(m, tp)) continue;
      for (auto precision : opt.precisions) {
        for (auto seq : opt.gemm_seqs) {
          for (const auto& s : model_shapes(m, tp, 1, seq, precision)) {
            if (!std::holds_alternative<AttentionShape>(s)) add_unique(out, seen, s);
          }
        }
      }
      for (auto seq : opt.attention_seqs) {
        for (const auto& s : model_shapes(m, tp, 1, seq, Precision::kBF16)) {
          if (std::holds_alternative<AttentionShape>(s)) add_unique(out, seen, s);
        }
      }
    }
  }
  // GEMM grid: every m, n, k on the powers of two, in each element type.
  const auto g = pow2_grid(opt.gemm_grid_lo, opt.gemm_grid_hi);
  for (auto precision : opt.precisions) {
    const DType dtype = precision == Precision::kFP8 ? DType::kFP8 : DType::kBF16;
    for (auto m : g) {
      for (auto n : g) {
        for (auto k : g) add_unique(out, seen, GemmShape{m, n, k, dtype});
      }
    }
  }
  // Attention grid: multi-head attention at the grid head sizes, both passes.
  for (auto d : opt.attention_grid_head_dims) {
    for (auto h : opt.attention_grid_heads) {
      for (auto seq : opt.attention_seqs) {
        for (auto pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
          add_unique(out, seen, AttentionShape{1, seq, h, h, d, true, pass, DType::kBF16});
        }
      }
    }
  }
  // Memory-bound grid: every op at power-of-two element counts (rows of 4096; the optimizer's
  // flat buffers as one row).
  constexpr std::int64_t kCols = 4096;
  for (const auto& op : memory_ops()) {
    const bool flat = op.name == "adam" || op.name == "grad_norm" || op.name == "copy";
    for (auto elements : pow2_grid(opt.memory_grid_lo, opt.memory_grid_hi)) {
      const MemoryShape s = flat ? MemoryShape{std::string(op.name), 1, elements}
                                 : MemoryShape{std::string(op.name), elements / kCols, kCols};
      add_unique(out, seen, s);
    }
  }
  return out;
}

std::vector<KernelShape> filter_ops(const std::vector<KernelShape>& shapes,
                                    const std::vector<std::string>& ops) {
  if (ops.empty()) return shapes;
  std::vector<KernelShape> out;
  for (const auto& s : shapes) {
    const std::string name = op_name(s);
    const std::string group = std::holds_alternative<MemoryShape>(s) ? "memory" : name;
    if (std::find(ops.begin(), ops.end(), name) != ops.end() ||
        std::find(ops.begin(), ops.end(), group) != ops.end()) {
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace trainsim::kernels
