// Vocabulary padding across two layouts: the rows a framework pads the vocabulary to depend on
// TP, so a checkpoint saved at one TP holds a different number of rows than the new TP expects.
#include <numeric>

#include "sim/core/format.hpp"
#include "sim/plan/vocab.hpp"
#include "sim/reshard/checks.hpp"

namespace trainsim {

namespace {

// "row 7" or "rows 7-9".
std::string rows(std::int64_t first, std::int64_t last) {
  return first == last ? "row " + std::to_string(first)
                       : "rows " + std::to_string(first) + "-" + std::to_string(last);
}

std::string rule(const LayoutShards& l) {
  return "a multiple of " + std::to_string(l.vocab_multiple) + " x " + std::to_string(l.plan.tp);
}

// The smallest --vocab-divisible-by that makes the new layout pad to the old layout's rows, if
// any: then only the new run changes and the old shards merge row for row.
std::int64_t divisor_matching(std::int64_t vocab, std::int64_t rows, std::int64_t tp) {
  if (rows % tp != 0) return 0;
  for (std::int64_t d = 1; d * tp <= rows; ++d) {
    if (padded_vocab(vocab, d, tp) == rows) return d;
  }
  return 0;
}

std::string fix_text(const ReshardContext& c) {
  const std::int64_t v = c.model.vocab_size;
  const LayoutShards& a = c.from;
  const LayoutShards& b = c.to;
  std::string fix;
  if (const std::int64_t d = divisor_matching(v, a.padded_vocab, b.plan.tp)) {
    fix = "pad the new run's vocabulary as the checkpoint's: --vocab-divisible-by " +
          std::to_string(d) + " at tp " + std::to_string(b.plan.tp) +
          " (vocab-divisible-by=" + std::to_string(d) +
          " in --to; nanotron's "
          "make_vocab_size_divisible_by, Megatron-LM's --make-vocab-size-divisible-by) gives " +
          format_grouped(a.padded_vocab) + " rows, " + std::to_string(a.padded_vocab - v) +
          " of padding, and the old shards merge row for row; ";
  }
  const std::int64_t m = std::lcm(a.vocab_multiple * a.plan.tp, b.vocab_multiple * b.plan.tp);
  const std::int64_t common = padded_vocab(v, m, 1);
  fix += "for runs that change TP, pad to a multiple both TP sizes share: lcm(" +
         std::to_string(a.vocab_multiple * a.plan.tp) + ", " +
         std::to_string(b.vocab_multiple * b.plan.tp) + ") = " + std::to_string(m) + ", i.e. " +
         format_grouped(common) + " rows (" + std::to_string(common - v) +
         " of padding) at both layouts (--vocab-divisible-by " + std::to_string(m / a.plan.tp) +
         " at tp " + std::to_string(a.plan.tp) + ", " + std::to_string(m / b.plan.tp) + " at tp " +
         std::to_string(b.plan.tp) + "); or convert offline: merge the old shards, keep rows 0-" +
         std::to_string(v - 1) + ", and re-pad to " + format_grouped(b.padded_vocab);
  return fix;
}

// nanotron (serialize/optimizer.py, weights.py): old shards are written into a buffer of one
// unsharded shape by their global slices, then the new shard is cut out. The buffer is the new
// shape for optimizer states and the checkpoint's shape for weights, so whichever layout pads
// less cannot hold the other's last shard.
std::string nanotron_failure(const ReshardContext& c) {
  const LayoutShards& a = c.from;
  const LayoutShards& b = c.to;
  const bool shrinks = a.padded_vocab > b.padded_vocab;
  const LayoutShards& big = shrinks ? a : b;
  const std::int64_t small_rows = shrinks ? b.padded_vocab : a.padded_vocab;
  const TpShard& last = big.placed.front().shards.back();
  const std::int64_t begin = last.split.begin;
  const std::string h = std::to_string(c.model.hidden_size);
  return std::string(shrinks ? "the old" : "the new") + " layout's last shard, tp rank " +
         std::to_string(big.plan.tp - 1) + ", is rows " + std::to_string(begin) + "-" +
         std::to_string(last.split.end - 1) + " (" + std::to_string(last.split.size()) +
         " rows: " + std::to_string(last.real) + " of the vocabulary and " +
         std::to_string(last.split.size() - last.real) + " of padding); nanotron's loader (" +
         (shrinks ? "serialize/optimizer.py: Adam's exp_avg and exp_avg_sq"
                  : "serialize/weights.py") +
         ") writes shards by their global slices into a buffer of shape [" +
         std::to_string(small_rows) + ", " + h + "], whose rows " + std::to_string(begin) +
         "- hold only " + std::to_string(small_rows - begin) + ": " +
         std::to_string(last.split.size()) + " vs " + std::to_string(small_rows - begin) +
         " rows, a shape mismatch at resume (nanotron issue #106)";
}

}  // namespace

std::vector<Diagnostic> find_padding_change(const ReshardContext& c) {
  const LayoutShards& a = c.from;
  const LayoutShards& b = c.to;
  if (a.padded_vocab == b.padded_vocab) return {};
  Diagnostic d;
  d.id = "vocab-padding-mismatch";
  const std::string sizes = "the vocabulary (" + format_grouped(c.model.vocab_size) +
                            ") is padded to " + format_grouped(a.padded_vocab) + " rows at tp " +
                            std::to_string(a.plan.tp) + " (" + rule(a) + ") and to " +
                            format_grouped(b.padded_vocab) + " at tp " + std::to_string(b.plan.tp) +
                            " (" + rule(b) + "): the embedding" +
                            (c.model.tied_embeddings ? " (tied to the LM head)" : " and LM head") +
                            " shards of the two layouts do not merge row for row; ";
  switch (b.plan.effective_framework()) {
    case Framework::kNanotron:
      d.severity = Severity::kError;
      d.message = sizes + nanotron_failure(c);
      break;
    case Framework::kMegatron:
      d.severity = Severity::kInfo;
      d.message = sizes +
                  "Megatron-LM loads the embedding and output layer with allow_shape_mismatch, so "
                  "the vocabulary's rows keep their global offsets and only padding rows differ";
      break;
    case Framework::kDeepSpeed:
      d.severity = Severity::kWarning;
      d.message = sizes +
                  "DeepSpeed resumes at another TP only from a universal checkpoint "
                  "(ds_to_universal.py), which keeps the unpadded vocabulary and pads it again";
      break;
    case Framework::kColossalAI:
      d.severity = Severity::kWarning;
      d.message = sizes +
                  "ColossalAI pads on load and must strip the padding on save; a save path that "
                  "does not writes one shard or the padded tensor (ColossalAI issue #6108): check "
                  "the checkpoint with --checkpoint";
      break;
  }
  d.fix = fix_text(c);
  return {d};
}

std::vector<Diagnostic> find_padding_rows(const ReshardContext& c) {
  const std::int64_t old_rows = c.from.padded_vocab;
  const std::int64_t new_rows = c.to.padded_vocab;
  if (old_rows == new_rows) return {};
  const std::int64_t h = c.model.hidden_size;
  const std::int64_t tables = c.model.tied_embeddings ? 1 : 2;
  Diagnostic d;
  d.id = "padding-rows";
  d.severity = Severity::kInfo;
  if (new_rows > old_rows) {
    const std::int64_t added = new_rows - old_rows;
    d.message = std::to_string(added) + " padding row" + (added == 1 ? " (" : "s (") +
                rows(old_rows, new_rows - 1) + ") per embedding table " +
                (added == 1 ? "exists" : "exist") +
                " only at the new layout: not loaded but initialised, their Adam moments zero, and "
                "trained from "
                "then on as softmax classes no token targets (" +
                format_bytes(static_cast<double>(added * h * tables) * 14.0) +
                " of weights and optimizer state in all)";
  } else {
    const std::int64_t dropped = old_rows - new_rows;
    d.message = std::to_string(dropped) + " padding row" + (dropped == 1 ? " (" : "s (") +
                rows(new_rows, old_rows - 1) + ") per embedding table of the checkpoint " +
                (dropped == 1 ? "is" : "are") +
                " dropped: rows no token uses, their weights and Adam moments discarded (" +
                format_bytes(static_cast<double>(dropped * h * tables) * 14.0) + ")";
  }
  return {d};
}

}  // namespace trainsim
