#include "sim/validate/measured_runs.hpp"

#include <nlohmann/json.hpp>

#include "sim/core/child_process.hpp"
#include "sim/validate/step_time.hpp"

namespace trainsim {

namespace {

// The run's prediction in `row`.
void predict(const MeasuredRun& run, const Platform& platform, ValidationRow& row) {
  predict_step_time(
      row, [&run] { return run.model; }, run.plan, platform, run.engine);
}

// The run's prediction as text, to pass from a child process (a JSON object of the row's
// predicted fields).
std::string predicted_text(const MeasuredRun& run, const Platform& platform) {
  ValidationRow r;
  predict(run, platform, r);
  nlohmann::json j{{"predicted", r.predicted},
                   {"kernel_spread", r.kernel_spread},
                   {"peak_bytes", r.peak_bytes},
                   {"peak_unfragmented_bytes", r.peak_unfragmented_bytes},
                   {"peak_allocated_bytes", r.peak_allocated_bytes},
                   {"largest_allocation_stage", r.largest_allocation_stage}};
  if (r.skipped) j["skipped"] = *r.skipped;
  return j.dump();
}

// The prediction `text` holds in `row`; none: the replay's process failed.
void read_prediction(const std::optional<std::string>& text, ValidationRow& row) {
  if (!text) {
    row.skipped = "the replay failed (its process ended without a step time)";
    return;
  }
  const auto j = nlohmann::json::parse(*text);
  row.predicted = j.at("predicted");
  row.kernel_spread = j.at("kernel_spread");
  row.peak_bytes = j.at("peak_bytes");
  row.peak_unfragmented_bytes = j.at("peak_unfragmented_bytes");
  row.peak_allocated_bytes = j.at("peak_allocated_bytes");
  row.largest_allocation_stage = j.at("largest_allocation_stage");
  if (j.contains("skipped")) row.skipped = j.at("skipped").get<std::string>();
}

// Every run's prediction: SimGrid's each in a child process (SimGrid runs one simulation per
// process), `jobs` at a time; the analytic engine's here.
std::vector<ValidationRow> predictions(const std::vector<MeasuredRun>& runs,
                                       const Platform& platform, std::int64_t jobs) {
  std::vector<ValidationRow> rows(runs.size());
  std::vector<std::function<std::string()>> works;
  std::vector<std::size_t> replayed;  // the runs `works` predicts
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].skipped) continue;
    if (runs[i].engine == EngineKind::kSimGrid) {
      works.emplace_back([&runs, &platform, i] { return predicted_text(runs[i], platform); });
      replayed.push_back(i);
    } else {
      predict(runs[i], platform, rows[i]);
    }
  }
  const auto texts = run_in_children(works, static_cast<std::size_t>(jobs));
  for (std::size_t k = 0; k < replayed.size(); ++k) read_prediction(texts[k], rows[replayed[k]]);
  return rows;
}

// The run's rows, one per figure of `figures` with `measured` set from it, after `base` (the
// run's prediction); one skipped row for a skipped run.
void add_rows(ValidationSet& set, const MeasuredRun& run, const ValidationRow& base,
              const std::vector<MeasuredFigure>& figures) {
  if (run.skipped) {
    set.rows.push_back(base);
    return;
  }
  for (const MeasuredFigure& figure : figures) {
    ValidationRow row = base;
    row.name += " (" + figure.source + ")";
    row.measured = figure.value;
    set.rows.push_back(row);
  }
}

// A memory row's prediction from the run's: the largest allocation, on its stage. A
// mixture-of-experts run's routing, not forced to balance, may give the measured GPU's experts
// more than their mean share, so its row does not join the fit of the allocated overhead.
ValidationRow memory_row(const MeasuredRun& run, const ValidationRow& predicted) {
  ValidationRow row = predicted;
  row.predicted = predicted.peak_allocated_bytes;
  row.stage = predicted.largest_allocation_stage;
  row.fits_overhead = !run.model.moe.is_moe();
  return row;
}

}  // namespace

std::vector<ValidationSet> validate_measured_runs(const std::string& reference,
                                                  const std::vector<MeasuredRun>& runs,
                                                  const Platform& platform, std::int64_t jobs) {
  ValidationSet steps = step_time_set(
      reference, platform,
      "Step time of measured runs: each scenario's \"published\" step times (or tokens/s per GPU "
      "as a step time) against the step `trainsim run` predicts for it (its engine, the symmetric "
      "replay)");
  steps.reference = reference;
  ValidationSet peaks;
  peaks.reference = reference;
  peaks.metric =
      "Peak memory of measured runs: each scenario's \"published\" max_allocated_gib "
      "(torch.cuda.max_memory_allocated of the GPU that allocated most) against trainsim's peak "
      "allocated bytes of the stage that allocates most (model state, activations walked over its "
      "schedule, and the platform's allocated runtime overhead)";
  peaks.platform = platform.name;
  peaks.allocated_overhead = platform.memory.allocated;
  const std::vector<ValidationRow> predicted = predictions(runs, platform, jobs);
  bool any_peak = false;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const MeasuredRun& run = runs[i];
    ValidationRow base = predicted[i];
    base.name = run.name;
    base.setup = run.setup;
    base.skipped = run.skipped ? run.skipped : base.skipped;
    add_rows(steps, run, base, run.steps);
    if (!run.peaks.empty()) add_rows(peaks, run, memory_row(run, base), run.peaks);
    any_peak = any_peak || !run.peaks.empty();
  }
  if (!any_peak) return {steps};
  return {steps, peaks};
}

}  // namespace trainsim
