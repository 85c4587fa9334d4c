#pragma once
// Step time and peak memory against one's own measurements: runs a cluster made, each a model, a
// plan and the figures measured on it (a scenario file's "published" array), predicted as
// `trainsim run` predicts them. What a planner checks trainsim against before trusting it on
// that cluster.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/engine.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

/// One measured figure (a step time in seconds, or torch.cuda.max_memory_allocated in bytes, the
/// largest over the run's GPUs) and who measured it, where.
struct MeasuredFigure {
  double value = 0;
  std::string source;
};

/// A run whose step was measured: what ran and the step times measured on it.
struct MeasuredRun {
  std::string name;                    // the scenario's
  std::string setup;                   // the run in a few words
  std::optional<std::string> skipped;  // why it is not compared (nothing measured)
  Model model;
  Plan plan;
  EngineKind engine = EngineKind::kSimGrid;
  std::vector<MeasuredFigure> steps;
  std::vector<MeasuredFigure> peaks;  // max allocated bytes
};

/// The runs on `platform`, each simulated once on its engine (SimGrid's in child processes, `jobs`
/// at a time): a step-time set, one row per measured step time (named by the run and the source),
/// a skipped run one skipped row; then, where any run measured its peak, a memory set, one row per
/// peak against the stage that allocates most. `reference`: what the sets are called.
std::vector<ValidationSet> validate_measured_runs(const std::string& reference,
                                                  const std::vector<MeasuredRun>& runs,
                                                  const Platform& platform, std::int64_t jobs = 1);

}  // namespace trainsim
