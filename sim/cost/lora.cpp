#include "sim/cost/lora.hpp"

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "sim/cost/attention_ops.hpp"
#include "sim/cost/kernel_specs.hpp"
#include "sim/plan/lora_modules.hpp"

namespace trainsim {

namespace {

bool all_named(const OverlapPair& o, const char* suffix) {
  return std::all_of(o.kernels.begin(), o.kernels.end(),
                     [suffix](const std::string& n) { return n.ends_with(suffix); });
}

// Takes one call of `bytes` off the merged calls of its kind, dimension and stream.
void remove_call(std::vector<CollectiveLoad>& list, const OverlapPair& o) {
  for (auto it = list.begin(); it != list.end(); ++it) {
    if (it->kind != o.kind || it->dim != o.dim || !it->alongside) continue;
    it->bytes -= o.bytes;
    it->count -= 1;
    if (it->count == 0) list.erase(it);
    return;
  }
}

// The backward without weight gradients. A linear's TP calls beside its GEMMs (layer_ops.hpp):
// with sequence parallelism its input is gathered again beside the data gradient only for the
// weight gradient (an all-gather beside ".dgrad", kBulk), and the input gradient's call ran
// beside the weight gradient; the first goes, the second runs after the pass.
void freeze(BlockPass& p) {
  std::erase_if(p.kernels, is_weight_gradient);
  std::vector<OverlapPair> kept;
  for (const auto& o : p.overlaps) {
    const bool regather = o.kind == CollectiveKind::kAllGather &&
                          o.method == OverlapMethod::kBulk && all_named(o, ".dgrad");
    const bool beside_wgrad = all_named(o, ".wgrad");
    if (!regather && !beside_wgrad) {
      kept.push_back(o);
      continue;
    }
    remove_call(p.collectives, o);
    if (beside_wgrad) add_collective(p.collectives, {o.kind, o.dim, o.bytes, 1, false});
  }
  p.overlaps = std::move(kept);
}

// A frozen linear's input cast to FP8 for its forward GEMM alone: no weight gradient reads it,
// so Transformer Engine leaves out its transpose (the input quantizer's column-wise usage is
// "backward needs input", the weight requiring a gradient; 2.0 to today, and 1.x casts without
// the transpose too).
void cast_without_transposes(BlockPass& forward) {
  for (auto& k : forward.kernels) {
    const auto* m = std::get_if<MemoryShape>(&k.shape);
    if (m == nullptr || m->op != "fp8_cast_transpose") continue;
    k = elementwise(k.name, "fp8_cast", static_cast<double>(m->rows), static_cast<double>(m->cols));
  }
}

struct Target {
  std::string linear;  // the base GEMM's kernel name
  double in = 0;       // the base linear's input width on this rank (row-parallel: its share)
  double out = 0;      // its output width on this rank (column-parallel: its share)
  bool column = true;
};

std::vector<Target> targets(const LayerShape& s) {
  const double t = static_cast<double>(s.tp);
  std::vector<Target> out;
  const auto on = [&s](LoraModule m) { return (s.lora.targets & m) != 0; };
  if (on(kLoraQkv)) out.push_back({attention_in_gemm(s), s.hidden, s.q + 2 * s.kv});
  if (on(kLoraProj)) out.push_back({"out_proj", s.v, s.hidden / t, false});
  if (on(kLoraFc1)) out.push_back({"mlp_up", s.hidden, s.up_factor * s.ffn});
  if (on(kLoraFc2)) out.push_back({"mlp_down", s.ffn, s.hidden / t, false});
  return out;
}

// A's outputs on this rank: beside a column-parallel linear its rank split over TP, beside a
// row-parallel one the whole rank (its input is split instead).
double a_outputs(const Target& a, const LayerShape& s) {
  const double r = static_cast<double>(s.lora.rank);
  return a.column ? r / static_cast<double>(s.tp) : r;
}

// One adapter's kernels and calls, forward and backward (see the header). Row-parallel
// targets: A reads the linear's input share and writes rank outputs; B writes hidden / tp, which
// the all-gather makes whole.
void add_adapter(BlockPasses& p, const Target& a, const LayerShape& s) {
  const double T = s.tokens, e = s.act_bytes;
  const double r = static_cast<double>(s.lora.rank), r_out = a_outputs(a, s);
  // What is scaled and added to the linear's output: its own shape beside a column-parallel
  // linear; beside a row-parallel one the gathered hidden states, the rank's share with SP.
  const double rows = a.column ? T : s.sharded_tokens();
  const double cols = a.column ? a.out : s.hidden;
  const std::string name = a.linear + ".lora";
  auto& f = p.forward.kernels;
  linear(f, name + "_a", T, a.in, r_out, DType::kBF16);
  linear(f, name + "_b", T, r, a.out, DType::kBF16);
  // x * (alpha / dim): one tensor read and written, as a copy moves it.
  f.push_back(elementwise(name + "_scale", "copy", rows, cols));
  f.push_back(elementwise(name + "_add", "add", rows, cols));
  auto& b = p.backward.kernels;
  b.push_back(elementwise(name + "_scale.grad", "copy", rows, cols));
  gemm_backward(b, name + "_b", T, r, a.out, DType::kBF16);
  gemm_backward(b, name + "_a", T, a.in, r_out, DType::kBF16);
  // A's input gradient added to the linear's own: Transformer Engine's norm-linear adds the
  // returned norm output's gradient to its data gradient (before its reduce-scatter, the output
  // returned gathered under sequence parallelism), and autograd sums a row-parallel linear's
  // input gradients. The whole sequence, the input's width on this rank.
  b.push_back(elementwise(name + "_input_grad_add", "add", T, a.in));
  if (s.tp == 1) return;
  tp_after(p.forward, a.column ? CollectiveKind::kAllGather : CollectiveKind::kAllReduce,
           T * r * e);
  if (!a.column) tp_after(p.forward, CollectiveKind::kAllGather, T * s.hidden * e);
  tp_after(p.backward, CollectiveKind::kAllReduce, T * r * e);  // B's input gradient
  if (a.column && !s.sp) tp_after(p.backward, CollectiveKind::kAllReduce, T * a.in * e);
  if (!a.column && s.sp) tp_after(p.backward, CollectiveKind::kAllGather, T * s.hidden * e);
}

}  // namespace

void apply_lora(BlockPasses& passes, BlockKind block, const LayerShape& s) {
  freeze(passes.backward);
  cast_without_transposes(passes.forward);
  if (block != BlockKind::kDecoder) return;
  for (const auto& a : targets(s)) add_adapter(passes, a, s);
}

std::int64_t lora_params_per_layer(const LayerShape& s) {
  const double r = static_cast<double>(s.lora.rank);
  double params = 0;
  for (const auto& a : targets(s)) params += a.in * a_outputs(a, s) + r * a.out;
  return whole(params);
}

}  // namespace trainsim
