#include "sim/check/checks.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "sim/check/alternatives.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/memory/memory.hpp"
#include "sim/model/params.hpp"
#include "sim/plan/vocab.hpp"

namespace trainsim {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
  }
  return "?";
}

namespace {

std::string n(std::int64_t v) {
  return std::to_string(v);
}

// "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

std::string percent(double fraction) {
  return format_fixed(100.0 * fraction, 1) + " %";
}

// The memory of a plan with its own partition rule; nullopt when the plan is not buildable or its
// partition has a defect a framework stops on.
std::optional<MemoryModel> memory_of(const Model& model, const Platform& platform,
                                     const Plan& plan) {
  try {
    validate_plan(plan, model, platform, {});
    const Partition partition = build_partition(model, platform, plan);
    if (partition_is_defective(partition)) return std::nullopt;
    const CostModel costs = compute_costs(model, platform, plan, partition);
    return compute_memory(model, platform, plan, partition, costs);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

double worst_peak(const MemoryModel& m) {
  return m.stages[static_cast<std::size_t>(m.worst_stage())].peak_bytes;
}

// The flags that turn plan `from` into `to`.
std::string plan_changes(const Plan& from, const Plan& to) {
  std::string out;
  auto add = [&out](const std::string& flag) { out += (out.empty() ? "" : " ") + flag; };
  if (to.schedule != from.schedule) add(std::string("--schedule ") + to_string(to.schedule));
  if (to.tp != from.tp) add("--tp " + n(to.tp));
  if (to.pp != from.pp) add("--pp " + n(to.pp));
  if (to.dp != from.dp) add("--dp " + n(to.dp));
  if (to.mbs != from.mbs) add("--mbs " + n(to.mbs));
  if (to.sp && !from.sp) add("--sp");
  if (to.zero != from.zero) add("--zero " + n(to.zero));
  if (to.recompute != from.recompute) add(std::string("--recompute ") + to_string(to.recompute));
  return out;
}

class Checker {
 public:
  Checker(const Model& model, const Platform& platform, const Plan& plan,
          const Partition& partition, const CostModel& costs, const CheckOptions& options)
      : model_(model),
        platform_(platform),
        plan_(plan),
        partition_(partition),
        costs_(costs),
        options_(options) {}

  std::vector<Diagnostic> run() {
    check_partition_defects();
    check_imbalance();
    check_batch();
    check_vocabulary();
    check_tp_span();
    check_memory();
    return std::move(out_);
  }

 private:
  // The plan as given, simulated without contention (the baseline every fix compares with).
  double now() {
    if (!now_) now_ = price(model_, platform_, plan_, partition_).step_time_s;
    return *now_;
  }

  const Priced& balanced() {
    if (!balanced_) {
      balanced_ = price(model_, platform_, plan_, balanced_partition(model_, platform_, plan_));
    }
    return *balanced_;
  }

  std::string balanced_fix() {
    const Priced& b = balanced();
    return "--partition balanced (Megatron layout \"" + b.partition.megatron_layout() +
           "\", decoders per stage " + counts(b.partition) +
           "): " + step_comparison(b.step_time_s, now());
  }

  static std::string counts(const Partition& p) {
    std::string s = "[";
    for (auto c : p.decoder_counts()) s += (s.size() > 1 ? ", " : "") + n(c);
    return s + "]";
  }

  std::string rule_name() const {
    switch (plan_.effective_framework()) {
      case Framework::kNanotron:
        return "nanotron's";
      case Framework::kDeepSpeed:
        return "DeepSpeed's";
      case Framework::kColossalAI:
        return "ColossalAI's";
      case Framework::kMegatron:
        return "Megatron-LM's";
    }
    return "the";
  }

  // "stage 3", or with interleaving "virtual stage 11 (chunk 1 of stage 3)".
  std::string stage_name(std::int64_t s) const {
    if (partition_.chunks == 1) return "stage " + n(s);
    const auto p = partition_.physical_stages();
    return "virtual stage " + n(s) + " (chunk " + n(s / p) + " of stage " + n(s % p) + ")";
  }

  // What the framework raises when a stage has nothing to train.
  std::string framework_error(std::int64_t stage) const {
    switch (plan_.effective_framework()) {
      case Framework::kNanotron:
        return "nanotron stops at start-up with \"ValueError: Can't use DDP because model in PP=" +
               n(stage) +
               " has no gradient. Consider increasing the number of layers of your model, or put "
               "a smaller PP size.\"";
      case Framework::kDeepSpeed:
        return "DeepSpeed builds that stage's optimizer over no parameters and PyTorch raises "
               "\"ValueError: optimizer got an empty parameter list\"";
      default:
        return "a data-parallel wrapper or optimizer over no parameters fails at start-up";
    }
  }

  // Why the rule produced the partition it did, for the partition defects.
  std::string rule_explanation() {
    const PartitionSpec spec = parse_partition_spec(plan_.partition, "--partition");
    if (spec.rule == PartitionRule::kNanotron) {
      const auto vocab = padded_vocab(model_.vocab_size, plan_.vocab_multiple(), plan_.tp);
      const auto costs = nanotron_block_costs(model_, partition_.blocks, vocab);
      const std::int64_t decoder = 4 * model_.num_attention_heads *
                                       (model_.hidden_size / model_.num_attention_heads) *
                                       model_.hidden_size +
                                   3 * model_.ffn_hidden_size * model_.hidden_size;
      const std::int64_t head = vocab * model_.hidden_size;
      const std::int64_t total = std::accumulate(costs.begin(), costs.end(), std::int64_t{0});
      std::int64_t head_stage = 0;
      for (std::int64_t s = 0; s < partition_.num_stages(); ++s) {
        if (partition_.holds(s, BlockKind::kLmHead)) head_stage = s;
      }
      return "nanotron's get_block_compute_costs weighs each decoder layer " +
             format_grouped(decoder) + " and the LM head " + format_grouped(head) +
             " (padded vocabulary " + format_grouped(vocab) + " x hidden " + n(model_.hidden_size) +
             ": " + percent(static_cast<double>(head) / static_cast<double>(total)) +
             " of the total), every other block 0; a rank takes blocks until their running cost "
             "passes total x (rank + 1) / pp, so the LM head fills stage " +
             n(head_stage) + " and what follows it spills onto the next stages";
    }
    if (spec.rule == PartitionRule::kDeepSpeedType ||
        spec.rule == PartitionRule::kDeepSpeedParameters) {
      const std::string weights =
          spec.rule == PartitionRule::kDeepSpeedType
              ? "weighs layers whose class name matches /" + spec.argument + "/ 1 and the rest 0"
              : "weighs every layer by its parameter count";
      return "DeepSpeed's PipelineModule " + weights +
             "; its partition_balanced binary-searches the heaviest stage's weight and cuts "
             "greedily, which can fill the first stages to that weight and leave the last ones "
             "with nothing (decoders per stage " +
             counts(partition_) + ")";
    }
    if (spec.rule == PartitionRule::kLayout)
      return "the layout string assigns the stages as written";
    return rule_name() + " rule gives decoders per stage " + counts(partition_);
  }

  void check_partition_defects() {
    std::string fix;
    auto fix_text = [&]() -> const std::string& {
      if (fix.empty()) {
        std::vector<std::string> options;
        if (partition_.method != "balanced") options.push_back(balanced_fix());
        if (auto smaller = smaller_pp_without_defect(model_, platform_, plan_)) {
          options.push_back("or keep " + rule_name() + " rule with --pp " + n(smaller->plan.pp) +
                            " --dp " + n(smaller->plan.dp) + " (same GPUs, decoders per stage " +
                            counts(smaller->partition) +
                            "): " + step_comparison(smaller->step_time_s, now()));
        }
        for (const auto& o : options) fix += (fix.empty() ? "" : "; ") + o;
      }
      return fix;
    };
    for (std::int64_t s = 0; s < partition_.num_stages(); ++s) {
      if (partition_.num_blocks(s) == 0) {
        Diagnostic d;
        d.id = "empty-stage";
        d.severity = Severity::kError;
        d.stage = s;
        d.message = stage_name(s) + " of " + n(partition_.num_stages()) +
                    " holds no blocks at all: its GPUs only pass activations on. " +
                    rule_explanation() + ". " + framework_error(s) + ".";
        d.fix = fix_text();
        out_.push_back(std::move(d));
      } else if (!partition_.has_parameters(s)) {
        Diagnostic d;
        d.id = "stage-without-parameters";
        d.severity = Severity::kError;
        d.stage = s;
        d.message = stage_name(s) + " holds only " + and_list(partition_.labels(s)) +
                    ": no parameters to train. " + rule_explanation() + ". " + framework_error(s) +
                    ".";
        d.fix = fix_text();
        out_.push_back(std::move(d));
      }
    }
    if (partition_.dropped_layers > 0) {
      const std::int64_t built = model_.num_layers - partition_.dropped_layers;
      Diagnostic d;
      d.id = "layers-dropped";
      d.severity = Severity::kError;
      const PartitionSpec spec = parse_partition_spec(plan_.partition, "--partition");
      if (spec.rule == PartitionRule::kLayout) {
        d.message = "the layout builds " + n(built) + " of the model's " + n(model_.num_layers) +
                    " decoder layers; Megatron-LM rejects it (\"Number of decoder layers " +
                    n(built) + " must match num_layers " + n(model_.num_layers) +
                    "\"), and the model simulated here is the smaller one";
      } else {
        d.message = "pp " + n(plan_.pp) + " does not divide the " + n(model_.num_layers) +
                    " decoder layers: Megatron-Core's get_num_layers_to_build (before uneven "
                    "stages were supported) gives every stage num_layers // pp = " +
                    n(model_.num_layers / plan_.pp) + " layers, builds " + n(built) +
                    " and silently drops the last " + n(partition_.dropped_layers) +
                    "; current Megatron-LM refuses the plan (num_layers should be divisible by "
                    "pipeline_model_parallel_size). The step simulated here trains the smaller "
                    "model";
      }
      d.fix = fix_text();
      out_.push_back(std::move(d));
    }
  }

  void check_imbalance() {
    if (partition_.num_stages() < 2 || partition_.method == "balanced") return;
    for (std::int64_t s = 0; s < partition_.num_stages(); ++s) {
      if (partition_.num_blocks(s) == 0) return;  // empty stages are reported as such
    }
    const auto times = stage_times(platform_, plan_, costs_);
    const double mean =
        std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
    const auto slowest = std::max_element(times.begin(), times.end());
    const double excess = *slowest / mean - 1.0;
    if (excess <= options_.imbalance_threshold) return;
    const double gain = now() - balanced().step_time_s;
    if (gain <= 1e-3 * now()) return;  // no contiguous partition does better
    Diagnostic d;
    d.id = "stage-imbalance";
    d.severity = Severity::kWarning;
    d.stage = slowest - times.begin();
    d.message = stage_name(*d.stage) + " takes " + format_seconds(*slowest) +
                " per micro-batch (forward and backward), " + percent(excess) +
                " above the mean stage (" + format_seconds(mean) +
                "); the pipeline runs at its slowest stage's pace, which costs " +
                format_seconds(gain) + " (" + percent(gain / now()) + ") of the " +
                format_seconds(now()) + " step";
    d.fix = balanced_fix();
    out_.push_back(std::move(d));
  }

  void check_batch() {
    const std::int64_t per_step = plan_.mbs * plan_.dp;
    const std::int64_t gbs = plan_.global_batch();
    const std::int64_t m = plan_.num_microbatches();
    const std::int64_t p = plan_.pp;
    if (gbs % per_step != 0) {
      Diagnostic d;
      d.id = "gbs-not-divisible";
      d.severity = Severity::kError;
      d.message = "global batch " + n(gbs) + " is not a multiple of mbs x dp = " + n(plan_.mbs) +
                  " x " + n(plan_.dp) + " = " + n(per_step) +
                  "; Megatron-LM refuses it (\"global batch size (" + n(gbs) +
                  ") is not divisible by micro batch size (" + n(plan_.mbs) +
                  ") times data parallel size (" + n(plan_.dp) + ")\"). Simulated here with " +
                  n(m) + " micro-batches (" + n(m * per_step) + " sequences per step)";
      std::vector<std::string> options;
      for (std::int64_t alt : {m * per_step, (m + 1) * per_step}) {
        Plan a = plan_;
        a.gbs = alt;
        if (auto priced = price(model_, platform_, a)) {
          options.push_back("--gbs " + n(alt) + ": step " + format_seconds(priced->step_time_s) +
                            ", " + format_grouped(std::llround(priced->tokens_per_s)) +
                            " tokens/s");
        }
      }
      d.fix =
          options.empty() ? "" : options.front() + (options.size() > 1 ? "; or " + options[1] : "");
      out_.push_back(std::move(d));
    }
    if (p > 1 && m < p) {
      Diagnostic d;
      d.id = "microbatches-fewer-than-stages";
      d.severity = Severity::kWarning;
      d.message = n(m) + " micro-batches per step for " + n(p) +
                  " pipeline stages: every stage idles at least " + n(p - 1) + " of every " +
                  n(m + p - 1) + " pass slots (1F1B bubble (p-1)/(m+p-1) = " +
                  percent(static_cast<double>(p - 1) / static_cast<double>(m + p - 1)) + ")";
      Plan a = plan_;
      a.gbs = p * per_step;
      if (auto priced = price(model_, platform_, a)) {
        const double tokens_now =
            static_cast<double>(plan_.sequences_per_step() * plan_.seq_len) / now();
        d.fix = "--gbs " + n(a.gbs) + " (m = p): step " + format_seconds(priced->step_time_s) +
                ", " + format_grouped(std::llround(priced->tokens_per_s)) + " tokens/s vs " +
                format_grouped(std::llround(tokens_now)) + " now";
      }
      out_.push_back(std::move(d));
    }
  }

  void check_vocabulary() {
    const std::int64_t d = plan_.vocab_multiple();
    const std::int64_t padded = padded_vocab(model_.vocab_size, d, plan_.tp);
    if (padded == model_.vocab_size) return;
    const std::int64_t pad = padded - model_.vocab_size;
    const std::int64_t rows = padded / plan_.tp;
    const double h = static_cast<double>(model_.hidden_size);
    const double tokens = static_cast<double>(plan_.sequences_per_step() * plan_.seq_len);
    // The LM head GEMMs run on the padded rows: 6 FLOPs per row element per token.
    const double wasted_flops = 6.0 * tokens * h * static_cast<double>(pad);
    // BF16 weight, fp32 gradient, fp32 master weight and two Adam moments: 18 bytes per padded
    // element, in the embedding and (untied) the LM head, split over TP.
    const double tables = model_.tied_embeddings ? 1.0 : 2.0;
    const double wasted_bytes =
        tables * static_cast<double>(pad) * h * 18.0 / static_cast<double>(plan_.tp);
    Diagnostic diag;
    diag.id = "uneven-tp-shard";
    diag.severity = Severity::kWarning;
    diag.message =
        "the vocabulary (" + format_grouped(model_.vocab_size) +
        ") does not split evenly over tp " + n(plan_.tp) + ": " + rule_name() +
        " rule pads it to a multiple of " + n(d) + " x " + n(plan_.tp) + " = " + n(d * plan_.tp) +
        ", i.e. " + format_grouped(padded) + " rows, " + format_grouped(rows) + " per rank. The " +
        n(pad) + (pad == 1 ? " padding row costs " : " padding rows cost ") +
        format_flops(wasted_flops) + " per step in the LM head and " + format_bytes(wasted_bytes) +
        " of weights, gradients and optimizer state per GPU. Checkpoint hazard: " + n(rows) +
        " x " + n(plan_.tp) + " = " + n(padded) + " != " + n(model_.vocab_size) +
        ", so saving, converting or resuming at another TP must drop the padding; a save path "
        "that mishandles it writes the embedding as [" +
        n(rows) + ", " + n(model_.hidden_size) + "] or [" + n(padded) + ", " +
        n(model_.hidden_size) + "] instead of [" + n(model_.vocab_size) + ", " +
        n(model_.hidden_size) + "] (ColossalAI issue #6108)";
    std::vector<std::string> options;
    // The largest power-of-two vocabulary multiple below the current one that needs no padding.
    if (model_.vocab_size % plan_.tp == 0) {
      const std::int64_t per_rank = model_.vocab_size / plan_.tp;
      for (std::int64_t alt = std::int64_t{1} << 62; alt >= 1; alt /= 2) {
        if (alt >= d || per_rank % alt != 0) continue;
        Plan a = plan_;
        a.vocab_divisible_by = alt;
        if (auto priced = price(model_, platform_, a)) {
          options.push_back(
              "--vocab-divisible-by " + n(alt) + " (" + format_grouped(model_.vocab_size) + " = " +
              n(plan_.tp) + " x " + format_grouped(per_rank) +
              ", no padding, same GPUs): " + step_comparison(priced->step_time_s, now()));
        }
        break;
      }
    }
    // A smaller TP that pads nothing, on the same GPUs.
    for (std::int64_t tp = plan_.tp / 2; tp >= 1; tp /= 2) {
      if (padded_vocab(model_.vocab_size, d, tp) != model_.vocab_size) continue;
      Plan a = plan_;
      a.tp = tp;
      a.dp = plan_.dp * plan_.tp / tp;
      if (a.gbs > 0 && a.gbs % (a.mbs * a.dp) != 0) continue;
      if (auto priced = price(model_, platform_, a)) {
        options.push_back("--tp " + n(tp) + " --dp " + n(a.dp) + " (no padding, same GPUs): " +
                          step_comparison(priced->step_time_s, now()));
        break;
      }
    }
    options.push_back(std::string(options.empty() ? "keep" : "or keep") +
                      " the padding and strip the " + n(pad) + (pad == 1 ? " row" : " rows") +
                      " when saving (save [" + n(model_.vocab_size) + ", " + n(model_.hidden_size) +
                      "])");
    for (const auto& o : options) diag.fix += (diag.fix.empty() ? "" : "; ") + o;
    out_.push_back(std::move(diag));
  }

  void check_tp_span() {
    if (plan_.tp <= platform_.node.gpus_per_node) return;
    Diagnostic d;
    d.id = "tp-across-nodes";
    d.severity = Severity::kWarning;
    d.message = "tensor parallelism of " + n(plan_.tp) + " spans nodes of " +
                n(platform_.node.gpus_per_node) +
                " GPUs: its all-reduces leave NVLink for the network";
    Plan a = plan_;
    a.tp = platform_.node.gpus_per_node;
    a.dp = plan_.dp * plan_.tp / a.tp;
    if (auto priced = price(model_, platform_, a)) {
      d.fix = "--tp " + n(a.tp) + " --dp " + n(a.dp) + ": " +
              step_comparison(priced->step_time_s, now());
    }
    out_.push_back(std::move(d));
  }

  // A plan that fits in the GPU's memory: its worst stage's peak and its simulated step time.
  struct Fit {
    Plan plan;
    double peak = 0;
    double step = 0;
  };

  std::optional<Fit> fit_of(const Plan& p) {
    const auto memory = memory_of(model_, platform_, p);
    if (!memory || !memory->fits()) return std::nullopt;
    const auto priced = price(model_, platform_, p);
    if (!priced) return std::nullopt;
    return Fit{p, worst_peak(*memory), priced->step_time_s};
  }

  std::string fit_text(const Fit& f) {
    return plan_changes(plan_, f.plan) + " (peak " + format_bytes(f.peak) +
           "): " + step_comparison(f.step, now());
  }

  // Single changes to the plan, on the same GPUs, that each fit on their own, fastest first.
  std::vector<Fit> single_fixes() {
    std::vector<Plan> candidates;
    auto with = [&](auto change) {
      Plan p = plan_;
      change(p);
      candidates.push_back(p);
    };
    // GPipe keeps every micro-batch's activations until the backward; 1F1B at most pp of them.
    if (plan_.schedule == ScheduleKind::kGPipe) {
      with([](Plan& p) { p.schedule = ScheduleKind::k1F1B; });
    }
    if (plan_.recompute == Recompute::kNone) {
      with([](Plan& p) { p.recompute = Recompute::kSelective; });
    }
    if (plan_.recompute != Recompute::kFull) with([](Plan& p) { p.recompute = Recompute::kFull; });
    if (plan_.tp > 1 && !plan_.sp) with([](Plan& p) { p.sp = true; });
    if (plan_.dp > 1) {
      for (std::int64_t z : {1, 3}) {
        if (plan_.zero < z) with([z](Plan& p) { p.zero = z; });
      }
    }
    // One more pipeline stage (the next pp that divides the same GPUs), and twice the TP.
    for (std::int64_t pp = plan_.pp + 1; pp <= plan_.pp * plan_.dp; ++pp) {
      if ((plan_.pp * plan_.dp) % pp != 0) continue;
      with([&](Plan& p) {
        p.pp = pp;
        p.dp = plan_.pp * plan_.dp / pp;
      });
      break;
    }
    if (plan_.dp % 2 == 0) {
      with([](Plan& p) {
        p.tp *= 2;
        p.dp /= 2;
      });
    }
    if (plan_.mbs > 1 && plan_.mbs % 2 == 0) with([](Plan& p) { p.mbs /= 2; });
    std::vector<Fit> fits;
    for (const auto& p : candidates) {
      if (p.tp > platform_.node.gpus_per_node) continue;
      if (p.gbs > 0 && p.gbs % (p.mbs * p.dp) != 0) continue;
      if (auto f = fit_of(p)) fits.push_back(*f);
    }
    // Fastest first: the change a planner would make.
    std::stable_sort(fits.begin(), fits.end(),
                     [](const Fit& a, const Fit& b) { return a.step < b.step; });
    return fits;
  }

  // The fastest plan that fits on `gpus` GPUs, among every TP (powers of two within a node), PP
  // and DP that multiply to `gpus`, the lowest of ZeRO 0, 1 and 3 that fits, and sequence
  // parallelism with TP; without recomputation if any fits, else with selective, else with full
  // recomputation.
  std::optional<Fit> searched_fix(std::int64_t gpus) {
    for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      std::optional<Fit> fastest;
      for (std::int64_t tp = 1; tp <= platform_.node.gpus_per_node && tp <= gpus; tp *= 2) {
        if (gpus % tp != 0) continue;
        for (std::int64_t pp = 1; pp <= gpus / tp && pp <= model_.num_layers; ++pp) {
          if ((gpus / tp) % pp != 0) continue;
          const std::int64_t dp = gpus / tp / pp;
          if (plan_.gbs > 0 && plan_.gbs % (plan_.mbs * dp) != 0) continue;
          for (std::int64_t zero : {0, 1, 3}) {
            if (zero > 0 && dp == 1) continue;
            Plan p = plan_;
            p.tp = tp;
            p.pp = pp;
            p.dp = dp;
            p.gpus = 0;
            p.sp = tp > 1;
            p.zero = zero;
            p.recompute = r;
            auto f = fit_of(p);
            if (!f) continue;
            if (!fastest || f->step < fastest->step) fastest = f;
            break;  // a higher ZeRO stage saves memory this layout does not need
          }
        }
      }
      if (fastest) return fastest;
    }
    return std::nullopt;
  }

  // How far the search for a cluster that fits goes: up to this many times the plan's GPUs.
  static constexpr std::int64_t kMoreGpus = 16;

  std::string memory_fix() {
    const std::vector<Fit> fits = single_fixes();
    std::string fix;
    for (const auto& f : fits) fix += (fix.empty() ? "" : "; or ") + fit_text(f);
    if (!fits.empty()) return fix;
    const std::int64_t gpus = plan_.world_size();
    if (auto f = searched_fix(gpus)) {
      return "no single change fits; the fastest plan on the same " + n(gpus) +
             " GPUs that does: " + fit_text(*f);
    }
    for (std::int64_t more = 2 * gpus; more <= kMoreGpus * gpus; more *= 2) {
      auto f = searched_fix(more);
      if (!f) continue;
      const double tokens = static_cast<double>(f->plan.sequences_per_step() * f->plan.seq_len);
      return "no plan on " + n(gpus) + " GPUs fits; the smallest cluster that does has " + n(more) +
             " GPUs, and its fastest plan is " + plan_changes(plan_, f->plan) + " (peak " +
             format_bytes(f->peak) + "): step " + format_seconds(f->step) + ", " +
             format_grouped(std::llround(tokens / f->step)) + " tokens/s";
    }
    return "no plan of up to " + n(kMoreGpus * gpus) +
           " GPUs fits at this batch and sequence length";
  }

  void check_memory() {
    const MemoryModel mm = compute_memory(model_, platform_, plan_, partition_, costs_);
    if (mm.fits()) return;
    const std::int64_t worst = mm.worst_stage();
    const StageMemory& s = mm.stages[static_cast<std::size_t>(worst)];
    const ModelState& st = s.state;
    std::vector<std::string> others;
    for (std::size_t i = 0; i < mm.stages.size(); ++i) {
      if (static_cast<std::int64_t>(i) != worst && mm.stages[i].peak_bytes > mm.capacity) {
        others.push_back(n(static_cast<std::int64_t>(i)));
      }
    }
    Diagnostic d;
    d.id = "oom";
    d.severity = Severity::kError;
    d.stage = worst;
    d.message = "stage " + n(worst) + " needs " + format_bytes(s.peak_bytes) +
                " per GPU at its peak, more than the GPU's " + format_bytes(mm.capacity) + " (" +
                platform_.gpu.name + "): model state " + format_bytes(st.total()) + " (weights " +
                format_bytes(st.weights) + ", gradients " + format_bytes(st.gradients) +
                ", master weights " + format_bytes(st.master_weights) + ", Adam moments " +
                format_bytes(st.optimizer) + ", ZeRO " + n(plan_.zero) + "), activations " +
                format_bytes(s.activations_at_peak()) + " with " + n(s.timeline.peak_in_flight) +
                " micro-batch" + (s.timeline.peak_in_flight == 1 ? "" : "es") +
                " in flight at its peak (compute step " + n(s.timeline.peak_step + 1) + " of " +
                n(static_cast<std::int64_t>(s.timeline.after_step.size())) + " of its " +
                to_string(plan_.schedule) + " program), runtime " +
                format_bytes(s.runtime_at_peak()) +
                " (allocator buffers, fragmentation, CUDA context)";
    if (!others.empty()) {
      d.message += "; stage" + std::string(others.size() > 1 ? "s " : " ") + and_list(others) +
                   " also exceed" + (others.size() > 1 ? "" : "s") + " it";
    }
    d.fix = memory_fix();
    out_.push_back(std::move(d));
  }

  const Model& model_;
  const Platform& platform_;
  const Plan& plan_;
  const Partition& partition_;
  const CostModel& costs_;
  const CheckOptions& options_;
  std::optional<double> now_;
  std::optional<Priced> balanced_;
  std::vector<Diagnostic> out_;
};

}  // namespace

std::vector<Diagnostic> check_plan(const Model& model, const Platform& platform, const Plan& plan,
                                   const Partition& partition, const CostModel& costs,
                                   const CheckOptions& options) {
  return Checker(model, platform, plan, partition, costs, options).run();
}

}  // namespace trainsim
