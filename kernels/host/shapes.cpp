#include "kernels/host/shapes.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "sim/cost/layer_ops.hpp"
#include "sim/plan/vocab.hpp"
#include "sim/platform/kernel_db.hpp"

namespace trainsim::kernels {

void add_unique(std::vector<KernelShape>& out, std::set<std::string>& seen,
                const KernelShape& shape) {
  if (seen.insert(exact_key(shape)).second) out.push_back(shape);
}

namespace {

// The routed experts of the catalog's MoE models and of published_moe_layers(), as grouped GEMMs
// at every expert parallelism that leaves 1 to moe_max_groups local experts.
void add_moe_shapes(const std::vector<Model>& models, const SuiteOptions& opt,
                    std::vector<KernelShape>& out, std::set<std::string>& seen) {
  std::vector<MoeExperts> layers;
  for (const auto& m : models) {
    if (!m.moe.is_moe()) continue;
    layers.push_back({m.name, m.hidden_size, m.moe.expert_ffn_hidden_size, m.moe.num_experts,
                      m.moe.experts_per_token, "catalog"});
  }
  for (const auto& l : published_moe_layers()) layers.push_back(l);
  for (const auto& l : layers) {
    for (std::int64_t ep = 1; ep <= l.experts; ep *= 2) {
      if (l.experts / ep > opt.moe_max_groups) continue;
      for (auto etp : opt.moe_etps) {
        for (auto precision : opt.precisions) {
          const DType dtype = precision == Precision::kFP8 ? DType::kFP8 : DType::kBF16;
          for (auto tokens : opt.moe_tokens) {
            for (const auto& s :
                 moe_expert_shapes(l, ep, etp, tokens, dtype, opt.accumulating_wgrads)) {
              add_unique(out, seen, s);
            }
          }
        }
      }
    }
  }
}

}  // namespace

bool tp_feasible(const Model& model, std::int64_t tp) {
  const std::int64_t ffn =
      model.moe.is_moe() ? model.moe.expert_ffn_hidden_size : model.ffn_hidden_size;
  return tp >= 1 && model.num_attention_heads % tp == 0 && model.num_kv_heads % tp == 0 &&
         ffn % tp == 0;
}

namespace {

// Every kernel of a step's forward and backward passes, in the cost model's order.
std::vector<KernelSpec> model_kernels(const Model& model, std::int64_t tp, std::int64_t mbs,
                                      std::int64_t seq, Precision precision) {
  Plan plan;
  plan.tp = tp;
  plan.mbs = mbs;
  plan.seq_len = seq;
  plan.precision = precision;
  const auto padded = padded_vocab(model.vocab_size, plan.vocab_multiple(), tp);
  const LayerShape shape = layer_shape(model, plan, padded);
  std::vector<KernelSpec> out;
  for (BlockKind block : {BlockKind::kEmbedding, BlockKind::kDecoder, BlockKind::kFinalNorm,
                          BlockKind::kLmHead, BlockKind::kLoss}) {
    for (bool backward : {false, true}) {
      for (auto& k : block_pass(block, backward, shape).kernels) out.push_back(std::move(k));
    }
  }
  return out;
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<KernelShape> model_shapes(const Model& model, std::int64_t tp, std::int64_t mbs,
                                      std::int64_t seq, Precision precision) {
  std::vector<KernelShape> out;
  std::set<std::string> seen;
  for (const auto& k : model_kernels(model, tp, mbs, seq, precision))
    add_unique(out, seen, k.shape);
  return out;
}

std::vector<KernelShape> model_layout_gemms(const Model& model, std::int64_t tp, std::int64_t mbs,
                                            std::int64_t seq) {
  std::vector<KernelShape> out;
  std::set<std::string> seen;
  for (const auto& k : model_kernels(model, tp, mbs, seq, Precision::kBF16)) {
    const auto* g = std::get_if<GemmShape>(&k.shape);
    if (g == nullptr) continue;
    GemmShape laid = *g;
    if (ends_with(k.name, ".dgrad")) {
      laid.layout = GemmLayout::kNN;
    } else if (ends_with(k.name, ".wgrad")) {
      laid.layout = GemmLayout::kNT;
    } else {
      continue;
    }
    add_unique(out, seen, laid);
  }
  return out;
}

std::vector<KernelShape> model_accumulating_gemms(const Model& model, std::int64_t tp,
                                                  std::int64_t mbs, std::int64_t seq,
                                                  Precision precision) {
  std::vector<KernelShape> out;
  std::set<std::string> seen;
  for (const auto& k : model_kernels(model, tp, mbs, seq, precision)) {
    const auto* g = std::get_if<GemmShape>(&k.shape);
    // The MoE router's weight is not a fused linear layer: its gradient goes to .grad and is
    // added into the main gradient apart (Megatron-Core), not by the GEMM.
    if (g == nullptr || !ends_with(k.name, ".wgrad") || k.name.rfind("router", 0) == 0) continue;
    GemmShape acc = *g;
    acc.accumulate = true;
    add_unique(out, seen, acc);
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

std::vector<std::int64_t> octave_grid(std::int64_t lo, std::int64_t hi, int per_octave) {
  if (per_octave != 1 && per_octave != 2) {
    throw std::invalid_argument("octave_grid: 1 or 2 values per octave");
  }
  std::vector<std::int64_t> out;
  for (auto x : pow2_grid(lo, hi)) {
    out.push_back(x);
    if (per_octave == 2 && x < hi) out.push_back(x + x / 2);
  }
  return out;
}

const std::vector<MoeExperts>& published_moe_layers() {
  static const std::vector<MoeExperts> layers = {
      {"deepseek-v3", 7168, 2048, 256, 8,
       "deepseek-ai/DeepSeek-V3 config.json: hidden_size 7168, moe_intermediate_size 2048, "
       "n_routed_experts 256, num_experts_per_tok 8"},
      {"deepseek-proxy-32e", 7168, 2048, 32, 8,
       "Megatron-LM MoE layer performance test, DeepSeek proxy (refdata "
       "megatron_lm_moe_layer_perf_h100.json): 32 experts, top 8"},
      {"grok-1", 6144, 32768, 8, 2,
       "xai-org/grok-1: emb_size 6144, widening_factor 8 (FFN 32768), 8 experts, top 2"},
      {"llama4-maverick", 5120, 8192, 128, 1,
       "meta-llama/Llama-4-Maverick config.json: hidden_size 5120, intermediate_size 8192, "
       "num_local_experts 128, num_experts_per_tok 1"},
  };
  return layers;
}

std::vector<KernelShape> moe_expert_shapes(const MoeExperts& moe, std::int64_t ep, std::int64_t etp,
                                           std::int64_t tokens, DType dtype, bool accumulate) {
  if (ep < 1 || etp < 1 || moe.experts % ep != 0 || moe.ffn % etp != 0) return {};
  const std::int64_t routed = tokens * moe.topk * ep;
  if (routed % moe.experts != 0) return {};
  const std::int64_t groups = moe.experts / ep, m = routed / moe.experts;
  const std::int64_t up = 2 * moe.ffn / etp, down = moe.ffn / etp, h = moe.hidden;
  std::vector<KernelShape> out;
  // Linear [m x in] -> [m x out]: forward {m, out, in}, dgrad {m, in, out}, wgrad {in, out, m}.
  for (auto [in, outw] : {std::pair{h, up}, std::pair{down, h}}) {
    out.push_back(GemmShape{m, outw, in, dtype, groups});
    out.push_back(GemmShape{m, in, outw, dtype, groups});
    out.push_back(GemmShape{in, outw, m, dtype, groups});
    if (accumulate) out.push_back(GemmShape{in, outw, m, dtype, groups, GemmLayout::kTN, true});
  }
  return out;
}

namespace {

// Every m, n, k of `axis` as GEMMs like `like` (its element type, layout, accumulation).
void add_gemm_cube(const std::vector<std::int64_t>& axis, GemmShape like,
                   std::vector<KernelShape>& out, std::set<std::string>& seen) {
  for (auto m : axis) {
    for (auto n : axis) {
      for (auto k : axis) {
        like.m = m;
        like.n = n;
        like.k = k;
        add_unique(out, seen, like);
      }
    }
  }
}

// The GEMM grids: every m, n, k on the octave grid in each element type; the BF16 grid again in
// the data- and weight-gradient layouts; the weight gradients accumulating into FP32 at the
// powers of two, in each element type.
void add_gemm_grids(const SuiteOptions& opt, std::vector<KernelShape>& out,
                    std::set<std::string>& seen) {
  const auto g = octave_grid(opt.gemm_grid_lo, opt.gemm_grid_hi, opt.gemm_grid_per_octave);
  auto dtype_of = [](Precision p) { return p == Precision::kFP8 ? DType::kFP8 : DType::kBF16; };
  for (auto precision : opt.precisions) {
    add_gemm_cube(g, GemmShape{0, 0, 0, dtype_of(precision)}, out, seen);
  }
  if (opt.bf16_layouts) {
    for (auto layout : {GemmLayout::kNN, GemmLayout::kNT}) {
      add_gemm_cube(g, GemmShape{0, 0, 0, DType::kBF16, 1, layout}, out, seen);
    }
  }
  if (!opt.accumulating_wgrads) return;
  const auto p2 = pow2_grid(opt.gemm_grid_lo, opt.gemm_grid_hi);
  for (auto precision : opt.precisions) {
    add_gemm_cube(p2, GemmShape{0, 0, 0, dtype_of(precision), 1, GemmLayout::kTN, true}, out, seen);
  }
}

// The catalog's kernels: GEMMs and memory-bound ops at the GEMM sequence lengths (the BF16
// GEMMs also in the nn and nt layouts, the weight gradients also accumulating into FP32, where the
// options ask), attention at its own lengths; every model at every TP it allows.
void add_catalog_shapes(const std::vector<Model>& models, const SuiteOptions& opt,
                        std::vector<KernelShape>& out, std::set<std::string>& seen) {
  const auto acc_precisions = opt.accumulating_wgrads ? opt.precisions : std::vector<Precision>{};
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
      for (auto seq : opt.bf16_layouts ? opt.gemm_seqs : std::vector<std::int64_t>{}) {
        for (const auto& s : model_layout_gemms(m, tp, 1, seq)) add_unique(out, seen, s);
      }
      for (auto precision : acc_precisions) {
        for (auto seq : opt.gemm_seqs) {
          for (const auto& s : model_accumulating_gemms(m, tp, 1, seq, precision)) {
            add_unique(out, seen, s);
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
}

// Attention grid: multi-head attention at the grid head sizes, causal and not, both passes; then
// FlashAttention's harness shapes.
void add_attention_grids(const SuiteOptions& opt, std::vector<KernelShape>& out,
                         std::set<std::string>& seen) {
  for (bool causal : {true, false}) {
    for (auto d : opt.attention_grid_head_dims) {
      for (auto h : opt.attention_grid_heads) {
        for (auto seq : opt.attention_seqs) {
          for (auto pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
            add_unique(out, seen, AttentionShape{1, seq, h, h, d, causal, pass, DType::kBF16});
          }
        }
      }
    }
  }
  for (bool causal : {true, false}) {
    for (auto d : opt.attention_harness_head_dims) {
      for (auto seq : opt.attention_harness_seqs) {
        const std::int64_t b = 16384 / seq, h = 2048 / d;
        for (auto pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
          add_unique(out, seen, AttentionShape{b, seq, h, h, d, causal, pass, DType::kBF16});
        }
      }
    }
  }
}

// Memory-bound grid: every op at power-of-two element counts (rows of its grid widths; the
// optimizer's flat buffers as one row).
void add_memory_grid(const SuiteOptions& opt, std::vector<KernelShape>& out,
                     std::set<std::string>& seen) {
  for (const auto& op : memory_ops()) {
    if (!op.in_suite) continue;
    const bool flat = op.name == "adam" || op.name == "grad_norm" || op.name == "copy";
    for (auto elements : pow2_grid(opt.memory_grid_lo, opt.memory_grid_hi)) {
      if (flat) {
        add_unique(out, seen, MemoryShape{std::string(op.name), 1, elements});
        continue;
      }
      for (auto cols : op.grid_cols) {
        add_unique(out, seen, MemoryShape{std::string(op.name), elements / cols, cols});
      }
    }
  }
}

}  // namespace

std::vector<KernelShape> suite_shapes(const std::vector<Model>& models, const SuiteOptions& opt) {
  std::vector<KernelShape> out;
  std::set<std::string> seen;
  add_catalog_shapes(models, opt, out, seen);
  add_moe_shapes(models, opt, out, seen);
  add_gemm_grids(opt, out, seen);
  add_attention_grids(opt, out, seen);
  add_memory_grid(opt, out, seen);
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
