// Vocabulary padding: a vocabulary that does not split evenly over TP is padded, which costs
// FLOPs and memory and is a checkpoint hazard (ColossalAI issue #6108).
#include "sim/check/detect.hpp"
#include "sim/check/wording.hpp"
#include "sim/core/format.hpp"
#include "sim/plan/vocab.hpp"

namespace trainsim {

namespace {

// What the padding rows cost: LM-head FLOPs per step and bytes of state per GPU.
std::string padding_cost(const CheckContext& c, std::int64_t pad) {
  const Model& model = c.model;
  const double h = static_cast<double>(model.hidden_size);
  const double tokens = static_cast<double>(c.plan.sequences_per_step() * c.plan.seq_len);
  // The LM head GEMMs run on the padded rows: 6 FLOPs per row element per token.
  const double wasted_flops = 6.0 * tokens * h * static_cast<double>(pad);
  // BF16 weight, fp32 gradient, fp32 master weight and two Adam moments: 18 bytes per padded
  // element, in the embedding and (untied) the LM head, split over TP.
  const double tables = model.tied_embeddings ? 1.0 : 2.0;
  const double wasted_bytes =
      tables * static_cast<double>(pad) * h * 18.0 / static_cast<double>(c.plan.tp);
  return std::to_string(pad) + (pad == 1 ? " padding row costs " : " padding rows cost ") +
         format_flops(wasted_flops) + " per step in the LM head and " + format_bytes(wasted_bytes) +
         " of weights, gradients and optimizer state per GPU";
}

}  // namespace

std::vector<Finding> find_vocabulary_padding(const CheckContext& context) {
  const Model& model = context.model;
  const Plan& plan = context.plan;
  const std::int64_t d = plan.vocab_multiple();
  const std::int64_t padded = padded_vocab(model.vocab_size, d, plan.tp);
  if (padded == model.vocab_size) return {};
  const std::int64_t pad = padded - model.vocab_size;
  const std::string rows = std::to_string(padded / plan.tp);
  const std::string tp = std::to_string(plan.tp);
  const std::string hidden = std::to_string(model.hidden_size);
  Diagnostic diag;
  diag.id = "uneven-tp-shard";
  diag.severity = Severity::kWarning;
  const std::string cost = padding_cost(context, pad);
  const std::string as_saved = "[" + std::to_string(model.vocab_size) + ", " + hidden + "]";
  if (plan.tp == 1) {
    // No TP split to be uneven: the framework's multiple alone pads the one shard.
    diag.message = "the vocabulary (" + format_grouped(model.vocab_size) +
                   ") is not a multiple of " + std::to_string(d) + ": " + rule_name(plan) +
                   " rule pads it to " + format_grouped(padded) + " rows. The " + cost +
                   ". Checkpoint hazard: converting the checkpoint or resuming at another TP "
                   "must drop the padding; a save path that mishandles it writes the embedding "
                   "as [" +
                   std::to_string(padded) + ", " + hidden + "] instead of " + as_saved +
                   " (ColossalAI issue #6108)";
    return {{std::move(diag), UnpaddedVocabulary{pad}}};
  }
  diag.message =
      "the vocabulary (" + format_grouped(model.vocab_size) + ") does not split evenly over tp " +
      tp + ": " + rule_name(plan) + " rule pads it to a multiple of " + std::to_string(d) + " x " +
      tp + " = " + std::to_string(d * plan.tp) + ", i.e. " + format_grouped(padded) + " rows, " +
      format_grouped(padded / plan.tp) + " per rank. The " + cost + ". Checkpoint hazard: " + rows +
      " x " + tp + " = " + std::to_string(padded) + " != " + std::to_string(model.vocab_size) +
      ", so saving, converting or resuming at another TP must drop the padding; a save path "
      "that mishandles it writes the embedding as [" +
      rows + ", " + hidden + "] or [" + std::to_string(padded) + ", " + hidden + "] instead of " +
      as_saved + " (ColossalAI issue #6108)";
  return {{std::move(diag), UnpaddedVocabulary{pad}}};
}

}  // namespace trainsim
