// Megatron-LM's CI runs on DGX H100 against trainsim: the peak allocated memory of the last
// pipeline stage (megatron_lm_ci_golden_values_h100.json, completed by
// megatron_lm_ci_model_args_h100.json beside it).
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"
#include "sim/validate/megatron_ci_run.hpp"
#include "sim/validate/reference_fields.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

namespace {

// One row of megatron_lm_ci_golden_values_h100.json against trainsim's memory.
ValidationRow megatron_memory_row(const CiReference& ref, const nlohmann::json& j,
                                  const std::string& path, const Platform& platform) {
  CiRun run = read_ci_run(ref, j, path);
  ValidationRow row;
  row.name = run.name;
  const auto measured = Fields(j, ref.file, path).number("mem_max_allocated_bytes_max");
  if (!measured) {
    row.skipped = "no mem-max-allocated-bytes";
    return row;
  }
  row.measured = *measured;
  if (run.skipped) {
    row.skipped = run.skipped;
    return row;
  }
  // Without the distributed optimizer dp changes neither the state nor, under 1F1B, the last
  // stage's single micro-batch in flight.
  if (!run.gpus) {
    row.note =
        "GPU count not in the recipe; assumed 8 (one node), which does not change this "
        "stage's peak without the distributed optimizer";
  }
  if (run.model.moe.is_moe()) {
    // CI routes without forced balance and drops no tokens; the row's residual holds what that
    // routing did, so it is predicted with the fitted overhead and not fitted.
    if (!row.note.empty()) row.note += "; ";
    row.note +=
        "routing balanced by an auxiliary loss or Sinkhorn, not forced, and no token dropped: "
        "the measured GPU's experts may take more than their mean share of the tokens, which "
        "trainsim's balanced default (--moe-imbalance 1) does not see";
    row.fits_overhead = false;
  }
  row.setup = run.setup;
  try {
    validate_model(run.model, ref.file);
    validate_plan(run.plan, run.model, platform, {});
    const Partition partition = build_partition(run.model, platform, run.plan);
    const CostModel costs = compute_costs(run.model, platform, run.plan, partition);
    const MemoryModel memory = compute_memory(run.model, platform, run.plan, partition, costs);
    // Megatron-LM writes TensorBoard from rank world_size - 1 (megatron/training/global_vars.py);
    // with its rank order (tp innermost, pp outermost) that is a GPU of the last stage.
    row.stage = partition.physical_stages() - 1;
    row.predicted = memory.stages.back().peak_allocated;
    // torch.cuda.memory_allocated as the same rank logs it after each step: no activations left.
    if (const auto after = Fields(j, ref.file, path).number("mem_allocated_bytes_max")) {
      row.measured_after_step = *after;
      row.predicted_after_step = memory.stages.back().base();
    }
  } catch (const InputError& e) {
    row.skipped = std::string("not expressible: ") + e.what();
  }
  return row;
}

}  // namespace

ValidationSet validate_megatron_ci_memory(const CiReference& ref, const Platform& platform) {
  ValidationSet set;
  set.reference = std::filesystem::path(ref.file).filename().string();
  set.metric =
      "measured: mem-max-allocated-bytes, the largest torch.cuda.max_memory_allocated logged by "
      "rank world_size - 1 (the last pipeline stage); predicted: trainsim's peak allocated bytes "
      "of that stage (model state, activations walked over its 1F1B or interleaved 1F1B program, "
      "and the platform's "
      "allocated runtime overhead)";
  set.platform = platform.name;
  set.allocated_overhead = platform.memory.allocated;
  for_each_row(ref.rows(), ref.file, [&](const nlohmann::json& row, const std::string& path) {
    set.rows.push_back(megatron_memory_row(ref, row, path, platform));
  });
  return set;
}

}  // namespace trainsim
