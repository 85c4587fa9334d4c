#pragma once
// One plan of a sweep, judged and priced: refused by a rule, by a partition defect a framework
// stops on or by memory, in that order (each refusal a value with its reason), else simulated on
// the analytic engine (symmetric replay where the layout allows it) and checked for defects by
// the detectors alone (no fix is priced: a sweep's neighbours are its other rows).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"

namespace trainsim {

/// Where a plan stopped: priced, or the first requirement it failed; kSame: it passes every rule
/// but is another row's plan (a field it sets changes nothing here), priced once, there.
enum class SweepStatus { kOk, kRule, kSame, kDefect, kMemory, kSimulation };
inline constexpr int kNumSweepStatuses = 6;
const char* to_string(SweepStatus status);  // ok, rule, same, defect, memory, simulation

struct SweepRow {
  std::int64_t index = 0;
  std::string platform;  // the name of the platform it is priced on
  std::int64_t gpus = 0;
  /// The plan, absent where the swept values did not make one (a rule refused them first).
  std::optional<Plan> plan;
  SweepStatus status = SweepStatus::kOk;
  std::string reason;  // why it was refused; empty when priced
  double step_s = 0;
  double step_p10_s = 0;
  double step_p90_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;  // model FLOPs
  double mfu = 0;
  std::optional<double> peak_bytes;      // worst stage's peak memory per GPU, once computed
  std::vector<std::string> diagnostics;  // ids of the detectors' findings, each once
};

/// A row refused before it had a plan (`reason`: the rule's message).
SweepRow refused_row(std::int64_t index, std::int64_t gpus, std::string reason);

/// Judges and prices `plan`. `shapes`: collective group shapes priced already on this platform.
/// `same_as`: why the plan is another row's (kSame once the rules pass), where it is.
SweepRow evaluate_sweep_plan(const Model& model, const Platform& platform, const Plan& plan,
                             std::int64_t index, CollectiveShapes* shapes = nullptr,
                             const std::optional<std::string>& same_as = std::nullopt);

}  // namespace trainsim
