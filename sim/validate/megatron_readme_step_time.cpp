// Megatron-LM README's weak-scaling table on DGX H100 (megatron_lm_readme_h100_weak_scaling.json)
// against trainsim's step time. The table gives each GPT's shape, its TP x PP x DP layout, the
// global batch and the TFLOP/s per GPU by Megatron-LM's own FLOP count; the step time it implies
// is that count over the rate and the GPUs. The README states sequence 4,096, vocabulary
// 131,072, BF16, and DP and TP communication overlap (so sequence parallelism, which TP overlap
// needs, and the distributed optimizer, which the parameter-gather overlap needs); it does not
// give the micro-batch size, the virtual pipeline size or recomputation. trainsim takes, of those,
// the fastest plan that fits in memory: a benchmark table is the tuned run.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/model/flops.hpp"
#include "sim/search/plan_space.hpp"
#include "sim/validate/parallel_rows.hpp"
#include "sim/validate/reference_fields.hpp"
#include "sim/validate/step_time.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

namespace {

constexpr std::int64_t kSeqLen = 4096;
constexpr std::int64_t kVocab = 131072;

// The README's GPT: Megatron-LM's defaults (learned positions, LayerNorm, biases, GeLU MLP of 4h)
// with untied embeddings (the only choice that gives the table's parameter counts).
Model readme_model(const Fields& f, const std::string& name, const std::string& file) {
  auto required = [&f](const char* key) { return f.required_integer(key, "a weak-scaling row"); };
  return megatron_default_gpt({.layers = required("num_layers"),
                               .hidden = required("hidden_size"),
                               .heads = required("attention_heads"),
                               .vocab = f.integer("vocab_size").value_or(kVocab),
                               .tied = false,
                               .max_positions = f.integer("seq_len").value_or(kSeqLen)},
                              name, file);
}

// What the README states of every run.
Plan readme_plan(const Fields& f) {
  auto required = [&f](const char* key) { return f.required_integer(key, "a weak-scaling row"); };
  Plan p;
  p.tp = required("tp");
  p.pp = required("pp");
  p.dp = required("dp");
  p.gbs = required("global_batch_size");
  p.seq_len = f.integer("seq_len").value_or(kSeqLen);
  p.sp = p.tp_comm_overlap = p.tp > 1;
  p.zero = 1;
  p.overlap_grad_reduce = p.overlap_param_gather = true;
  return p;
}

// The stated plan with each choice of what the README leaves out.
std::vector<Plan> unstated_choices(const Plan& stated, std::int64_t layers) {
  std::vector<std::int64_t> vps = {1};
  for (std::int64_t vp = 2; stated.pp > 1 && vp * stated.pp <= layers; ++vp) {
    if (layers % (stated.pp * vp) == 0) vps.push_back(vp);
  }
  std::vector<Plan> out;
  for (std::int64_t mbs : {1, 2, 4}) {
    for (std::int64_t vp : vps) {
      for (Recompute r : {Recompute::kNone, Recompute::kSelective}) {
        Plan p = stated;
        p.mbs = mbs;
        p.vp = vp;
        p.schedule = vp > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
        p.recompute = r;
        out.push_back(p);
      }
    }
  }
  return out;
}

std::string readme_setup(const Model& m, const Plan& p) {
  std::ostringstream s;
  s << m.num_layers << " x " << m.hidden_size << ", tp " << p.tp << " pp " << p.pp;
  if (p.vp > 1) s << " x vp " << p.vp;
  s << " dp " << p.dp << ", gbs " << p.gbs << ", seq " << p.seq_len << "; chosen: mbs " << p.mbs
    << ", " << (p.recompute == Recompute::kNone ? "no" : to_string(p.recompute)) << " recompute";
  return s.str();
}

// The likely cause of a row's error, by where the measured step lies against the fitting choices.
std::string readme_cause(double measured, double fastest, double slowest) {
  if (measured > slowest) {
    return "slower than every choice of the unstated settings: a narrow model, whose small "
           "GEMMs leave launch gaps and host work (not modelled) the most weight";
  }
  if (measured < fastest) {
    return "faster than every choice of the unstated settings: trainsim prices this run too "
           "slow whatever they were";
  }
  return "between the fastest and the slowest choice of the settings the README leaves out "
         "(micro-batch, virtual pipeline size, recomputation): the prediction takes the "
         "fastest, the run's own are not published";
}

ValidationRow readme_row(const nlohmann::json& j, const std::string& file, const std::string& path,
                         const Platform& platform) {
  const Fields f(j, file, path);
  ValidationRow row;
  row.name = "GPT " + f.string("model_size").value_or("?") + " " +
             std::to_string(f.integer("n_gpus").value_or(0)) + " GPUs (Megatron-LM README)";
  const auto tflops = f.number("tflops_per_gpu");
  const auto gpus = f.integer("n_gpus");
  if (!tflops || !gpus || *tflops <= 0 || *gpus <= 0) {
    row.skipped = "no TFLOP/s per GPU or GPU count";
    return row;
  }
  const Model m = readme_model(f, row.name, file);
  const Plan stated = readme_plan(f);
  if (stated.world_size() != *gpus) f.fail("n_gpus", "is not tp x pp x dp");
  // Megatron-LM's num_floating_point_operations (megatron/training/training.py, core r0.8),
  // 12 B s l h^2 (1 + 4 + 1 + s/h + V/2lh) for these multi-head, 4h GeLU models with the s x s
  // products counted whole, is model_flops_per_sample's count: 72 l h^2 (1 + s/6h) + 6hV a token.
  row.measured = model_flops_per_sample(m, stated.seq_len) * static_cast<double>(stated.gbs) /
                 (*tflops * 1e12 * static_cast<double>(*gpus));
  try {
    validate_model(m, file);
    const Partition partition = build_partition(m, platform, stated);
    PlanSpace space(m, platform, stated, partition);
    std::optional<Priced> best;
    double slowest = 0;
    std::int64_t fitting = 0;
    for (const Plan& p : unstated_choices(stated, m.num_layers)) {
      const Outcome o = space.price({p}, Need::kFits);
      if (!o) continue;
      ++fitting;
      slowest = std::max(slowest, o->step_time_s);
      if (!best || o->step_time_s < best->step_time_s) best = *o;
    }
    if (!best) {
      row.skipped = "no choice of micro-batch, virtual pipeline and recomputation fits";
      return row;
    }
    row.predicted = best->step_time_s;
    row.setup = readme_setup(m, best->plan) + " (fastest of " + std::to_string(fitting) +
                " that fit; the slowest " + format_fixed(slowest, 3) + " s)";
    row.note = readme_cause(row.measured, row.predicted, slowest);
  } catch (const InputError& e) {
    row.skipped = std::string("not expressible: ") + e.what();
  }
  return row;
}

}  // namespace

ValidationSet validate_megatron_readme_step_time(const std::filesystem::path& reference,
                                                 const Platform& platform) {
  const std::string file = reference.string();
  const nlohmann::json j = load_json_file(reference);
  const auto& rows = reference_rows(j, file, "not the Megatron-LM README weak-scaling table");
  ValidationSet set = step_time_set(
      reference, platform,
      "measured: the step time implied by the weak-scaling table of Megatron-LM's README on DGX "
      "H100 (Megatron-LM's FLOP count of a step over the table's TFLOP/s per GPU and GPU count); "
      "predicted: trainsim's step time (analytic engine, symmetric replay) for the row's model, "
      "layout and batch at sequence 4096, BF16, sequence parallelism with TP overlap, the "
      "distributed optimizer with overlapped gradient reduction and parameter gather, and, of "
      "the micro-batch size (1, 2, 4), virtual pipeline size and recomputation (none, selective) "
      "the README leaves out, the fastest choice that fits. Reported apart from the accuracy "
      "targets and never fitted");
  set.rows = parallel_rows(rows, file, [&](const nlohmann::json& row, const std::string& path) {
    return readme_row(row, file, path, platform);
  });
  return set;
}

}  // namespace trainsim
