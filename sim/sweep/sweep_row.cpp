#include "sim/sweep/sweep_row.hpp"

#include <algorithm>
#include <utility>

#include "sim/check/detect.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/cost/step_flops.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"

namespace trainsim {

const char* to_string(SweepStatus status) {
  switch (status) {
    case SweepStatus::kOk:
      return "ok";
    case SweepStatus::kRule:
      return "rule";
    case SweepStatus::kSame:
      return "same";
    case SweepStatus::kDefect:
      return "defect";
    case SweepStatus::kMemory:
      return "memory";
    case SweepStatus::kSimulation:
      return "simulation";
  }
  return "?";
}

SweepRow refused_row(std::int64_t index, std::int64_t gpus, std::string reason) {
  SweepRow row;
  row.index = index;
  row.gpus = gpus;
  row.status = SweepStatus::kRule;
  row.reason = std::move(reason);
  return row;
}

namespace {

SweepRow& refuse(SweepRow& row, SweepStatus status, std::string reason) {
  row.status = status;
  row.reason = std::move(reason);
  return row;
}

// The step's figures as a report gives them: band, throughput, model FLOPs and MFU.
void price(SweepRow& row, const Model& model, const Platform& platform, const Plan& plan,
           const CostModel& costs, double step) {
  row.step_s = step;
  const double spread = kernel_spread(costs).width();
  row.step_p10_s = platform.calibration.band.low(step, spread);
  row.step_p90_s = platform.calibration.band.high(step, spread);
  const StepRates rates = step_rates(model, platform, plan, step);
  row.tokens_per_s = rates.tokens_per_s;
  row.tflops_per_gpu = rates.model_flops_per_gpu / 1e12;
  row.mfu = rates.mfu;
}

}  // namespace

SweepRow evaluate_sweep_plan(const Model& base, const Platform& platform, const Plan& plan,
                             std::int64_t index, CollectiveShapes* shapes,
                             const std::optional<std::string>& same_as) {
  const Model model = trained_model(base, plan);
  SweepRow row;
  row.index = index;
  row.platform = platform.name;
  row.gpus = plan.world_size();
  row.plan = plan;
  std::optional<Partition> partition;
  try {
    validate_plan(plan, model, platform, {});
    partition = build_partition(model, platform, plan);
  } catch (const InputError& e) {
    return refuse(row, SweepStatus::kRule, e.what());
  }
  if (same_as) return refuse(row, SweepStatus::kSame, *same_as);
  if (auto defect = partition_defect(*partition)) {
    return refuse(row, SweepStatus::kDefect, *defect);
  }
  const CostModel costs = compute_costs(model, platform, plan, *partition);
  const MemoryModel memory = compute_memory(model, platform, plan, *partition, costs);
  const StageMemory& worst = memory.stages[static_cast<std::size_t>(memory.worst_stage())];
  row.peak_bytes = worst.peak_bytes;
  if (const MemoryFit fit = memory.fit(); fit != MemoryFit::kFits) {
    // A sweep keeps the assumed fragmentation's margin; a plan only it refuses says so.
    const std::string tight = fit == MemoryFit::kTight
                                  ? " (tight: " + format_bytes(worst.peak_unfragmented_bytes) +
                                        " without the allocator fragmentation the platform assumes)"
                                  : "";
    return refuse(row, SweepStatus::kMemory,
                  "does not fit: peak " + format_bytes(*row.peak_bytes) + " per GPU, the GPU has " +
                      format_bytes(platform.gpu.memory_bytes) + tight);
  }
  try {
    price(row, model, platform, plan, costs,
          replay(platform, plan, costs, EngineKind::kAnalytic, shapes, true).step_time_s);
  } catch (const InputError& e) {
    return refuse(row, SweepStatus::kSimulation, e.what());
  }
  const std::vector<double> times = stage_times(platform, plan, costs);
  for (const Finding& f : detect({model, platform, plan, *partition, costs, times, {}, &memory})) {
    const std::string& id = f.diagnostic.id;
    if (std::find(row.diagnostics.begin(), row.diagnostics.end(), id) == row.diagnostics.end()) {
      row.diagnostics.push_back(id);
    }
  }
  return row;
}

}  // namespace trainsim
