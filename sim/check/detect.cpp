#include "sim/check/detect.hpp"

#include "sim/memory/memory.hpp"

namespace trainsim {

const MemoryModel& plan_memory(const CheckContext& context, std::optional<MemoryModel>& computed) {
  if (context.memory) return *context.memory;
  computed = compute_memory(context.model, context.platform, context.plan, context.partition,
                            context.costs);
  return *computed;
}

std::vector<Finding> detect(const CheckContext& context) {
  std::vector<Finding> out;
  for (auto* detector :
       {find_partition_defects, find_imbalance, find_batch_problems, find_vocabulary_padding,
        find_tp_across_nodes, find_cp_ring_exposed, find_cp_a2a_across_nodes, find_expert_imbalance,
        find_ep_across_nodes, find_expert_tp_split, find_ep_a2a_exposed, find_pp_exchanges_exposed,
        find_model_beyond_modelled, find_zero_unsharded, find_out_of_memory}) {
    for (auto& f : detector(context)) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace trainsim
