#pragma once
// Detection of plan defects, one detector per file, each reading the shared context and returning
// its findings in report order. Nothing here simulates: the fixes are requests (fix_request.hpp),
// a search to run or the plans to compare, that sim/search prices and writes out. A priced
// diagnostic is its detector's file, its line in detect() and its declarations here.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/check/context.hpp"
#include "sim/check/fix_request.hpp"

namespace trainsim {

/// Every detector in report order: partition defects, imbalance, batch, vocabulary, TP span,
/// CP ring, CP all-to-all span, expert load, EP span, expert TP, exposed all-to-alls, exposed
/// pipeline exchanges, what the model holds beyond the simulation, unsharded ZeRO, memory.
std::vector<Finding> detect(const CheckContext& context);

/// The plan's memory: the caller's where it computed it already (context.memory), else computed
/// into `computed` (for detectors that need it).
const MemoryModel& plan_memory(const CheckContext& context, std::optional<MemoryModel>& computed);

/// Stages with no blocks or no parameters, and decoder layers the rule does not build.
std::vector<Finding> find_partition_defects(const CheckContext& context);
/// The slowest stage far above the mean stage (options.imbalance_threshold).
std::vector<Finding> find_imbalance(const CheckContext& context);
/// A global batch that mbs x dp does not divide; fewer micro-batches than stages.
std::vector<Finding> find_batch_problems(const CheckContext& context);
/// A vocabulary padded to split over TP.
std::vector<Finding> find_vocabulary_padding(const CheckContext& context);
/// A TP group (as the plan's rank order places it) spanning nodes.
std::vector<Finding> find_tp_across_nodes(const CheckContext& context);
/// A context-parallel ring (p2p, or a2a+p2p's rings) whose transfers stall the attention.
std::vector<Finding> find_cp_ring_exposed(const CheckContext& context);
/// Context parallelism's all-to-alls (a2a, or a2a+p2p's a2a level) over a group spanning nodes
/// (withdrawn where no alternative is faster).
std::vector<Finding> find_cp_a2a_across_nodes(const CheckContext& context);
/// A skewed expert load whose busiest GPU's extra rows take a large share of a stage's passes.
std::vector<Finding> find_expert_imbalance(const CheckContext& context);
/// An expert-parallel group spanning nodes (its fix is withdrawn where no alternative is faster).
std::vector<Finding> find_ep_across_nodes(const CheckContext& context);
/// Experts split over an expert TP group where EP could hold them whole on the same GPUs (withdrawn
/// where no such plan is faster).
std::vector<Finding> find_expert_tp_split(const CheckContext& context);
/// Expert all-to-alls on the compute stream taking a large share of a stage's passes (withdrawn
/// where overlapping them is no faster).
std::vector<Finding> find_ep_a2a_exposed(const CheckContext& context);
/// An interleaved pipeline waiting for its exchanges on the compute stream, where they take a
/// large share of a stage's chunks (withdrawn where overlapping them is no faster).
std::vector<Finding> find_pp_exchanges_exposed(const CheckContext& context);
/// The largest context parallelism among the measured runs of tests/validation/refdata/ that
/// trainsim's step time is checked against (a test holds it to those files).
inline constexpr std::int64_t kLargestValidatedCp = 2;

/// A sequence past the positions the model was trained on; configuration keys that change the
/// cost but are not modelled (the model's `unmodelled` notes); --tp-comm-overlap that Megatron
/// drops for the model; a --cp-comm-type at cp 1; cp past kLargestValidatedCp.
std::vector<Finding> find_model_beyond_modelled(const CheckContext& context);
/// ZeRO over a data-parallel group of one GPU, which shards nothing (its stage 2 and 3 working
/// set held for nothing).
std::vector<Finding> find_zero_unsharded(const CheckContext& context);
/// A stage whose peak memory exceeds the GPU's.
std::vector<Finding> find_out_of_memory(const CheckContext& context);

// The plans a detector's fix compares (PricedAlternatives), built without pricing any.

/// For cp-ring-exposed and cp-a2a-across-nodes, other ways across the CP group on the same GPUs:
/// the CP group moved next to TP in the rank order (where it is not already), p2p, a2a (where the
/// heads split over tp x cp), a2a+p2p at each a2a level the heads allow (each other than the
/// plan's own), and half the CP size with twice the DP (where it divides).
std::vector<Plan> cp_exchange_alternatives(const Plan& plan, const Model& model);
/// For expert-imbalance, capacity factors 1.25 and 1.0 (below the plan's, dropping the tokens over
/// them) and half the EP, on the same GPUs.
std::vector<Plan> expert_load_alternatives(const Plan& plan);
/// For ep-across-nodes, on the same GPUs: EP next to TP in the rank order, halved EPs down to a
/// node's GPUs, and (EP kept) a smaller expert TP until ep x etp fits in a node.
std::vector<Plan> ep_within_node_alternatives(const Plan& plan, std::int64_t gpus_per_node);
/// For expert-tp-split, expert TP traded for EP on the same GPUs: the expert TP halved down to 1,
/// the EP multiplied by as much (ep x etp kept, so each GPU holds the same share of the experts),
/// where the experts divide over the larger EP.
std::vector<Plan> experts_whole_alternatives(const Plan& plan, std::int64_t num_experts);

/// The defect a framework stops on, in a few words ("stage 3 has no parameters"); nullopt for a
/// partition without one.
std::optional<std::string> partition_defect(const Partition& partition);

}  // namespace trainsim
