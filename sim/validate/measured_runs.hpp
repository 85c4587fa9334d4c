#pragma once
// Step time against one's own measurements: runs a cluster made, each a model, a plan and the
// step times measured on it (a scenario file's "published" array), predicted as `trainsim run`
// predicts them. The set a planner checks trainsim against before trusting it on that cluster.
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

/// One measured step time and who measured it, where.
struct MeasuredStep {
  double step_time_s = 0;
  std::string source;
};

/// A run whose step was measured: what ran and the step times measured on it.
struct MeasuredRun {
  std::string name;                    // the scenario's
  std::string setup;                   // the run in a few words
  std::optional<std::string> skipped;  // why it is not compared (no measured step time)
  Model model;
  Plan plan;
  EngineKind engine = EngineKind::kSimGrid;
  std::vector<MeasuredStep> steps;
};

/// The runs on `platform`, one row per measured step time (named by the run and the source),
/// each run's step simulated once on its engine (SimGrid's in child processes, `jobs` at a time);
/// a skipped run is one skipped row. `reference`: what the set is called in the output.
ValidationSet validate_measured_runs(const std::string& reference,
                                     const std::vector<MeasuredRun>& runs, const Platform& platform,
                                     std::int64_t jobs = 1);

}  // namespace trainsim
