#pragma once
// The plan spaces the searches walk (memory fixes, layouts, a plan's neighbourhood) and the
// alternatives of the fixes written in sim/search, generated without pricing any: PlanSpace
// prices them. A detector's own alternatives live beside it (sim/check/detect.hpp).
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// Single changes to the plan, on the same GPUs, that each save memory, in this order: 1F1B for
/// GPipe, selective then full recomputation, sequence parallelism, ZeRO 1 and 3, one more pipeline
/// stage (the next pp dividing the same GPUs), twice the TP, twice the CP, twice the EP (a
/// mixture-of-experts model), half the micro-batch. Leaves out TP wider than a node and global
/// batches mbs x dp does not divide.
std::vector<Plan> memory_saving_changes(const Plan& plan, const Model& model,
                                        std::int64_t gpus_per_node);

/// One layout (tp, pp, dp) with each ZeRO stage that applies to it, the lowest first.
using ZeroLadder = std::vector<Plan>;

/// Every layout of `gpus` GPUs: TP a power of two within a node, CP a power of two that splits the
/// sequence into 2 x CP chunks, PP up to the model's layers, DP the rest and dividing the global
/// batch; for a mixture-of-experts model every power-of-two EP that divides the experts and the
/// stage's tp x cp x dp GPUs over the expert TP (1 for a dense one); sequence parallelism with
/// TP; ZeRO 0, 1 and 3 (only 0 without DP); the given recomputation.
std::vector<ZeroLadder> layouts_on(const Plan& plan, std::int64_t gpus, std::int64_t gpus_per_node,
                                   const Model& model, Recompute recompute);

/// Smaller pp on the same GPUs (dp grows as pp shrinks), the largest first.
std::vector<Plan> smaller_pp(const Plan& plan);

/// Megatron-LM's uneven first and last stages for `num_layers` decoders over the plan's pp (and
/// vp): each middle stage takes num_layers / pp rounded up to a multiple of vp, or one or two vp
/// more, and the two ends every split of the rest in multiples of vp, at least vp and at most a
/// middle stage's count each, and within 8 vp of each other; the uniform split and the plan's own
/// left out, the plan's other uneven-stage options dropped. Empty with fewer than 2 stages or where
/// no split exists.
std::vector<Plan> uneven_ends(const Plan& plan, std::int64_t num_layers);

/// The largest power-of-two vocabulary multiple below the plan's that pads nothing at its TP;
/// nullopt where the vocabulary does not divide over TP.
std::optional<Plan> unpadded_vocabulary_multiple(const Plan& plan, std::int64_t vocab_size);

/// Smaller TPs (halving) on the same GPUs that pad nothing, the largest first.
std::vector<Plan> unpadded_smaller_tp(const Plan& plan, std::int64_t vocab_size);

/// The plans one step from this one on the same GPUs: every smaller pp and twice the pp (DP taking
/// up the rest), half and twice the TP (within a node), the interleaved schedule with half or twice
/// the VP (or VP 2 from 1F1B), half and twice the micro-batch, each other recomputation, half and
/// twice the CP (DP taking up the rest), and for a mixture-of-experts model half and twice the EP.
/// Whether a framework would run each is left to pricing.
std::vector<Plan> neighbouring_plans(const Plan& plan, const Model& model,
                                     std::int64_t gpus_per_node);

}  // namespace trainsim
