#include "sim/validate/measured_runs.hpp"

#include <nlohmann/json.hpp>

#include "sim/core/child_process.hpp"
#include "sim/validate/step_time.hpp"

namespace trainsim {

namespace {

// The run's prediction in `row`: on SimGrid in a child process (SimGrid runs one simulation per
// process, and a set holds several), on the analytic engine here.
void predict(ValidationRow& row, const MeasuredRun& run, const Platform& platform) {
  const auto model = [&run] { return run.model; };
  if (run.engine != EngineKind::kSimGrid) {
    predict_step_time(row, model, run.plan, platform, run.engine);
    return;
  }
  const auto text = run_in_child([&] {
    ValidationRow r;
    predict_step_time(r, model, run.plan, platform, run.engine);
    nlohmann::json j{{"predicted", r.predicted},
                     {"kernel_spread", r.kernel_spread},
                     {"peak_bytes", r.peak_bytes},
                     {"peak_unfragmented_bytes", r.peak_unfragmented_bytes}};
    if (r.skipped) j["skipped"] = *r.skipped;
    return j.dump();
  });
  if (!text) {
    row.skipped = "the replay on SimGrid failed (its process ended without a step time)";
    return;
  }
  const auto j = nlohmann::json::parse(*text);
  row.predicted = j.at("predicted");
  row.kernel_spread = j.at("kernel_spread");
  row.peak_bytes = j.at("peak_bytes");
  row.peak_unfragmented_bytes = j.at("peak_unfragmented_bytes");
  if (j.contains("skipped")) row.skipped = j.at("skipped").get<std::string>();
}

}  // namespace

ValidationSet validate_measured_runs(const std::string& reference,
                                     const std::vector<MeasuredRun>& runs,
                                     const Platform& platform) {
  ValidationSet set = step_time_set(
      reference, platform,
      "Step time of measured runs: each scenario's \"published\" step times against the step "
      "`trainsim run` predicts for it (its engine, the symmetric replay)");
  set.reference = reference;
  for (const MeasuredRun& run : runs) {
    ValidationRow base;
    base.name = run.name;
    base.setup = run.setup;
    if (run.skipped) {
      base.skipped = run.skipped;
      set.rows.push_back(base);
      continue;
    }
    predict(base, run, platform);
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
