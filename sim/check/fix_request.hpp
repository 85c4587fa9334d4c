#pragma once
// What a diagnostic's fix should look for, as data. Detection (sim/check) says what is wanted;
// sim/search finds and prices the plans that do it and writes the fix text.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "sim/check/diagnostic.hpp"
#include "sim/plan/dims.hpp"

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

/// A vocabulary split without padding over TP: a smaller vocabulary multiple, or a smaller TP on
/// the same GPUs; else keep the `padding` rows and strip them when saving.
struct UnpaddedVocabulary {
  std::int64_t padding = 0;
};

/// Tensor parallelism within one node on the same GPUs: TP at most a node wide (DP growing), in a
/// rank order that keeps a TP group on one node.
struct TpWithinNode {
  std::int64_t tp = 0;
  std::int64_t dp = 0;
  RankOrder rank_order = kMegatronOrder;
};

/// A context-parallel ring whose transfers hide behind the attention, on the same GPUs: the CP
/// group within a node (rank order), the all-to-all variant, or half the CP size (DP doubling).
struct CpRingHidden {};

/// A shorter wait for the busiest expert, on the same GPUs: a capacity factor that drops the
/// tokens over it, or half the EP (each GPU averages the busiest expert with more others).
struct ExpertLoadSpread {};

/// Expert-parallel all-to-alls over NVLink, on the same GPUs: the EP group moved next to TP in
/// the rank order, or an EP a node wide (or narrower). Withdrawn where none is faster.
struct EpWithinNode {};

/// Each expert kept whole on its GPU, on the same GPUs: the expert TP halved (down to 1) and the EP
/// grown by as much, so that every GPU holds the same share of the experts' weights. Withdrawn
/// where none saves `min_gain` of the step.
struct ExpertsWholeOverEp {
  double min_gain = 0;
};

/// The expert all-to-alls overlapped with another micro-batch's compute
/// (--overlap-moe-expert-parallel-comm), on the same GPUs. Withdrawn where it is no faster.
struct EpOverlapped {};

/// Nothing to search: the fix is advice detection already knows (the model, not the plan, is
/// beyond what is modelled).
struct Advice {
  std::string text;
};

using FixRequest =
    std::variant<FitInMemory, DefectFreePartition, BalancedPartition, DivisibleBatch,
                 FullPipelineBatch, UnpaddedVocabulary, TpWithinNode, CpRingHidden,
                 ExpertLoadSpread, EpWithinNode, ExpertsWholeOverEp, EpOverlapped, Advice>;

/// A diagnostic as detection leaves it (fix text empty) with the fix to search for.
struct Finding {
  Diagnostic diagnostic;
  FixRequest fix;
};

}  // namespace trainsim
