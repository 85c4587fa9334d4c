#include "sim/search/fixes.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "sim/check/wording.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/plan_variants.hpp"
#include "sim/search/candidates.hpp"
#include "sim/search/memory_fix.hpp"
#include "sim/search/plan_text.hpp"

namespace trainsim {

namespace {

// The plan as given on trainsim's balanced partition.
Outcome balanced(PlanSpace& space) {
  return space.price({space.plan(), /*balanced=*/true});
}

// "--partition balanced" and what else changes with it (Megatron-LM's uneven stages dropped).
std::string balanced_text(PlanSpace& space, const Priced& b) {
  return balanced_plan_changes(space.plan(), b.plan) + " (Megatron layout \"" +
         b.partition.megatron_layout() + "\", decoders per stage " +
         decoder_counts_text(b.partition) +
         "): " + step_comparison(b.step_time_s, space.baseline());
}

// "--gbs 128: step 1.234 s, 56,789 tokens/s".
std::string batch_text(const Priced& p) {
  return "--gbs " + std::to_string(p.plan.gbs) + ": step " + format_seconds(p.step_time_s) + ", " +
         format_grouped(std::llround(p.tokens_per_s)) + " tokens/s";
}

// Writes each kind of request; every alternative is priced in the space.
struct FixWriter {
  PlanSpace& space;

  std::string operator()(const FitInMemory&) const { return memory_fix(space); }
  std::string operator()(const Advice& advice) const { return advice.text; }

  std::string operator()(const DefectFreePartition& request) const {
    std::vector<std::string> options;
    if (request.offer_balanced) {
      if (const Outcome b = balanced(space)) options.push_back(balanced_text(space, *b));
    }
    if (auto uneven = uneven_ends_text(/*faster_only=*/false)) options.push_back("or " + *uneven);
    for (const Plan& p : smaller_pp(space.plan())) {
      const Outcome o = space.price({p}, Need::kNoDefect);
      if (!o) continue;
      options.push_back("or keep " + rule_name(space.plan()) + " rule with --pp " +
                        std::to_string(p.pp) + " --dp " + std::to_string(p.dp) +
                        " (same GPUs, decoders per stage " + decoder_counts_text(o->partition) +
                        "): " + step_comparison(o->step_time_s, space.baseline()));
      break;
    }
    return join(options, "; ");
  }

  std::string operator()(const BalancedPartition& request) const {
    const Outcome b = balanced(space);
    if (!b) return "";
    std::string text = balanced_text(space, *b);
    if (auto uneven = uneven_ends_text(/*faster_only=*/true)) text += "; or " + *uneven;
    if (request.lm_head_stage) {
      if (auto deferring = deferral_text()) text += "; or " + *deferring;
    }
    return text;
  }

  // Megatron-LM's own uneven first and last stages on the same layout, the fastest split without
  // a defect, where the plan takes Megatron's uniform rule (replacing the uneven options it has);
  // with `faster_only`, only where it beats the plan as given.
  std::optional<std::string> uneven_ends_text(bool faster_only) const {
    const Plan& plan = space.plan();
    if (plan.partition != "uniform") return std::nullopt;
    std::optional<Priced> fastest;
    for (const Plan& p : uneven_ends(plan, space.model().num_layers)) {
      const Outcome o = space.price({p}, Need::kNoDefect);
      if (o && (!fastest || o->step_time_s < fastest->step_time_s)) fastest = *o;
    }
    if (!fastest || (faster_only && fastest->step_time_s >= space.baseline())) return std::nullopt;
    return plan_changes(plan, fastest->plan) + " (Megatron-LM's uneven ends, decoders per stage " +
           decoder_counts_text(fastest->partition) +
           "): " + step_comparison(fastest->step_time_s, space.baseline());
  }

  // The LM head's weight gradients left to the pipeline flush, where the plan does not defer
  // them yet, its rules allow it and it is faster.
  std::optional<std::string> deferral_text() const {
    if (space.plan().defer_embedding_wgrad_compute) return std::nullopt;
    Plan p = space.plan();
    p.defer_embedding_wgrad_compute = true;
    std::optional<Priced> fit;
    if (const Outcome o = space.price(search_candidate(space, p), Need::kFits)) {
      fit = *o;
    } else {
      fit = largest_fitting_deferral(space, p);  // every micro-batch's buffers do not fit
    }
    if (!fit || !fit->plan.defer_embedding_wgrad_compute || fit->step_time_s >= space.baseline()) {
      return std::nullopt;
    }
    return search_changes(space, fit->plan) +
           " (the LM head's weight gradients in the pipeline flush, as NeMo's Llama 3 and "
           "Nemotron-4 340B recipes run; peak " +
           format_bytes(*fit->peak_bytes) +
           "): " + step_comparison(fit->step_time_s, space.baseline());
  }

  std::string operator()(const DivisibleBatch& request) const {
    std::vector<std::string> options;
    for (std::int64_t gbs : request.gbs) {
      if (const Outcome o = space.price({with_gbs(space.plan(), gbs)})) {
        options.push_back(batch_text(*o));
      }
    }
    return join(options, "; or ");
  }

  std::string operator()(const FullPipelineBatch& request) const {
    const Outcome o = space.price({with_gbs(space.plan(), request.gbs)});
    if (!o) return "";
    const Plan& plan = space.plan();
    const double tokens_now =
        static_cast<double>(plan.sequences_per_step() * plan.seq_len) / space.baseline();
    return "--gbs " + std::to_string(request.gbs) + " (m = p): step " +
           format_seconds(o->step_time_s) + ", " + format_grouped(std::llround(o->tokens_per_s)) +
           " tokens/s vs " + format_grouped(std::llround(tokens_now)) + " now";
  }

  std::string operator()(const UnpaddedVocabulary& request) const;
  std::string operator()(const PricedAlternatives& request) const;
};

// The least change that removes the padding: a smaller vocabulary multiple, which prices the
// padding alone; only where none does, the smallest step down in TP (whose price is the TP
// change's as much as the padding's); and keeping the padding, stripped when saving.
std::string FixWriter::operator()(const UnpaddedVocabulary& request) const {
  const Plan& plan = space.plan();
  const Model& model = space.model();
  std::vector<std::string> options;
  const auto multiple = unpadded_vocabulary_multiple(plan, model.vocab_size);
  if (multiple) {
    if (const Outcome o = space.price({*multiple})) {
      options.push_back(
          "--vocab-divisible-by " + std::to_string(multiple->vocab_divisible_by) + " (" +
          format_grouped(model.vocab_size) + " = " + std::to_string(plan.tp) + " x " +
          format_grouped(model.vocab_size / plan.tp) +
          ", no padding, same GPUs): " + step_comparison(o->step_time_s, space.baseline()));
    }
  }
  if (!multiple) {
    for (const Plan& p : unpadded_smaller_tp(plan, model.vocab_size)) {
      if (const Outcome o = space.price({p})) {
        options.push_back(
            "--tp " + std::to_string(p.tp) + " --dp " + std::to_string(p.dp) +
            " (no padding, same GPUs): " + step_comparison(o->step_time_s, space.baseline()));
        break;
      }
    }
  }
  const std::int64_t pad = request.padding;
  options.push_back(
      std::string(options.empty() ? "keep" : "or keep") + " the padding and strip the " +
      std::to_string(pad) + (pad == 1 ? " row" : " rows") + " when saving (save [" +
      std::to_string(model.vocab_size) + ", " + std::to_string(model.hidden_size) + "])");
  return join(options, "; ");
}

// Each alternative that fits, the fastest first (with its peak memory where asked); with a
// `min_gain`, only those faster than the plan by more than that share of its step.
std::string FixWriter::operator()(const PricedAlternatives& request) const {
  const Plan& plan = space.plan();
  std::vector<std::pair<double, std::string>> priced;
  for (const Plan& p : request.plans) {
    const Outcome o = space.price({p}, Need::kFits);
    if (!o || (request.min_gain && o->step_time_s >= space.baseline() * (1 - *request.min_gain))) {
      continue;
    }
    std::string text = plan_changes(plan, p) +
                       " (same GPUs): " + step_comparison(o->step_time_s, space.baseline());
    if (request.with_peak && o->peak_bytes) text += ", peak " + format_bytes(*o->peak_bytes);
    priced.emplace_back(o->step_time_s, std::move(text));
  }
  std::sort(priced.begin(), priced.end());
  std::vector<std::string> options;
  for (auto& [step, text] : priced) options.push_back(std::move(text));
  return join(options, "; or ");
}

// Completes a stage-imbalance diagnostic with what the imbalance costs against the balanced
// partition; false where the balanced partition is no faster (no contiguous partition is).
bool price_imbalance(PlanSpace& space, Diagnostic& d) {
  const Outcome b = balanced(space);
  if (!b) return false;
  const double now = space.baseline();
  const double gain = now - b->step_time_s;
  if (gain <= 1e-3 * now) return false;
  d.message += "; the pipeline runs at its slowest stage's pace, which costs " +
               format_seconds(gain) + " (" + percent(gain / now) + ") of the " +
               format_seconds(now) + " step";
  return true;
}

}  // namespace

std::string fix_text(PlanSpace& space, const FixRequest& request) {
  return std::visit(FixWriter{space}, request);
}

std::vector<Diagnostic> write_fixes(PlanSpace& space, std::vector<Finding> findings) {
  std::vector<Diagnostic> out;
  for (auto& f : findings) {
    if (std::holds_alternative<BalancedPartition>(f.fix) && !price_imbalance(space, f.diagnostic)) {
      continue;
    }
    f.diagnostic.fix = fix_text(space, f.fix);
    // A defect only where a plan without it is faster (PricedAlternatives::min_gain).
    if (const auto* a = std::get_if<PricedAlternatives>(&f.fix);
        a && a->min_gain && f.diagnostic.fix.empty()) {
      continue;
    }
    out.push_back(std::move(f.diagnostic));
  }
  return out;
}

}  // namespace trainsim
