#pragma once
// What a diagnostic's fix should look for, as data. Detection (sim/check) says what is wanted, a
// search to run or the plans to compare; sim/search prices them and writes the fix text.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "sim/check/diagnostic.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// A plan that fits in the GPU's memory: the single changes that fit, else the fastest layout on
/// the same GPUs, else the smallest larger cluster (up to 16 times the GPUs) with one.
struct FitInMemory {};

/// A plan a framework can run despite a partition defect: trainsim's balanced partition (where
/// the plan does not use it already) and the largest smaller pp on the same GPUs whose partition
/// by the plan's own rule has no defect.
struct DefectFreePartition {
  bool offer_balanced = true;
};

/// trainsim's balanced partition. What the imbalance costs is only known once both plans are
/// priced: the search appends it to the message, and withdraws the diagnostic where the balanced
/// partition is no faster (then no contiguous partition does better).
struct BalancedPartition {
  /// The slowest stage holds the LM head: deferring its weight gradient to the pipeline flush
  /// (--defer-embedding-wgrad-compute) is priced too.
  bool lm_head_stage = false;
};

/// Global batch sizes that are multiples of mbs x dp, in the order to propose them.
struct DivisibleBatch {
  std::vector<std::int64_t> gbs;
};

/// A global batch with as many micro-batches as pipeline stages.
struct FullPipelineBatch {
  std::int64_t gbs = 0;
};

/// A vocabulary split without padding over TP: a smaller vocabulary multiple, or where none splits
/// it a smaller TP on the same GPUs; else keep the `padding` rows and strip them when saving.
struct UnpaddedVocabulary {
  std::int64_t padding = 0;
};

/// Other plans on the same GPUs that the detector names (the fix's candidates, built beside the
/// detector from the plan alone): each that fits is priced and listed, the fastest first. With
/// `min_gain`, only those saving more than that share of the step are, and the diagnostic is
/// withdrawn where none does (the defect is one only where a plan without it is faster).
struct PricedAlternatives {
  std::vector<Plan> plans;
  std::optional<double> min_gain;
  /// Each listed plan also gives its worst stage's peak memory per GPU (where what the defect
  /// costs is memory, not time).
  bool with_peak = false;
};

/// Nothing to search: the fix is advice detection already knows (the model, not the plan, is
/// beyond what is modelled).
struct Advice {
  std::string text;
};

using FixRequest = std::variant<FitInMemory, DefectFreePartition, BalancedPartition, DivisibleBatch,
                                FullPipelineBatch, UnpaddedVocabulary, PricedAlternatives, Advice>;

/// A diagnostic as detection leaves it (fix text empty) with the fix to search for.
struct Finding {
  Diagnostic diagnostic;
  FixRequest fix;
};

}  // namespace trainsim
