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
                   {"peak_unfragmented_bytes", r.peak_unfragmented_bytes}};
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

}  // namespace

ValidationSet validate_measured_runs(const std::string& reference,
                                     const std::vector<MeasuredRun>& runs, const Platform& platform,
                                     std::int64_t jobs) {
  ValidationSet set = step_time_set(
      reference, platform,
      "Step time of measured runs: each scenario's \"published\" step times against the step "
      "`trainsim run` predicts for it (its engine, the symmetric replay)");
  set.reference = reference;
  const std::vector<ValidationRow> predicted = predictions(runs, platform, jobs);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const MeasuredRun& run = runs[i];
    ValidationRow base = predicted[i];
    base.name = run.name;
    base.setup = run.setup;
    if (run.skipped) {
      base.skipped = run.skipped;
      set.rows.push_back(base);
      continue;
    }
    for (const MeasuredStep& step : run.steps) {
      ValidationRow row = base;
      row.name += " (" + step.source + ")";
      row.measured = step.step_time_s;
      set.rows.push_back(row);
    }
  }
  return set;
}

}  // namespace trainsim
