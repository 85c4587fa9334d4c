#pragma once
// Detection of plan defects, one detector per file, each reading the shared context and returning
// its findings in report order. Nothing here simulates: the fixes are requests (fix_request.hpp)
// that sim/search prices and writes out.
#include <optional>
#include <string>
#include <vector>

#include "sim/check/context.hpp"
#include "sim/check/fix_request.hpp"

namespace trainsim {

/// Every detector in report order: partition defects, imbalance, batch, vocabulary, TP span,
/// CP ring, expert load, EP span, expert TP, exposed all-to-alls, what the model holds beyond the
/// simulation, memory.
std::vector<Finding> detect(const CheckContext& context);

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
/// A context-parallel ring (p2p) whose transfers stall the attention.
std::vector<Finding> find_cp_ring_exposed(const CheckContext& context);
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
/// A sequence past the positions the model was trained on; configuration keys that change the
/// cost but are not modelled (the model's `unmodelled` notes).
std::vector<Finding> find_model_beyond_modelled(const CheckContext& context);
/// A stage whose peak memory exceeds the GPU's.
std::vector<Finding> find_out_of_memory(const CheckContext& context);

/// The defect a framework stops on, in a few words ("stage 3 has no parameters"); nullopt for a
/// partition without one.
std::optional<std::string> partition_defect(const Partition& partition);

}  // namespace trainsim
