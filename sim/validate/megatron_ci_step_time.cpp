// Megatron-LM's CI runs on DGX H100 against trainsim's step time: the median iteration time of a
// run's steady steps (megatron_lm_ci_golden_values_h100.json, completed by
// megatron_lm_ci_model_args_h100.json beside it), the same runs as the memory comparison.
#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/model/model.hpp"
#include "sim/validate/megatron_ci_run.hpp"
#include "sim/validate/parallel_rows.hpp"
#include "sim/validate/reference_fields.hpp"
#include "sim/validate/step_time.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

namespace {

// Why a CI run's step differs from trainsim's, by what the run is: every CI run sets
// deterministic mode and turns gradient-accumulation fusion off; small models are host-bound.
std::string likely_cause(const Model& m) {
  if (m.hidden_size < 2048) {
    return "a small model: the step is bound by the host (Python, kernel launches, Megatron-LM's "
           "per-step work), which trainsim does not model";
  }
  return "deterministic mode (Transformer Engine's deterministic attention backward, NCCL ring "
         "only) and gradient-accumulation fusion off, which CI sets for reproducibility and "
         "trainsim does not model";
}

ValidationRow megatron_step_row(const CiReference& ref, const nlohmann::json& j,
                                const std::string& path, const Platform& platform) {
  CiRun run = read_ci_run(ref, j, path);
  ValidationRow row;
  row.name = run.name;
  // Reported apart from the accuracy targets and never fitted: no half of the split.
  const auto measured = Fields(j, ref.file, path).number("iteration_time_s_median_steady");
  if (!measured || *measured <= 0) {
    row.skipped = "no iteration time";
    return row;
  }
  row.measured = *measured;
  if (run.skipped) {
    row.skipped = run.skipped;
  } else if (!run.gpus) {
    row.skipped = "GPU count not given, and the data-parallel size sets the step";
  } else if (run.plan.gbs <= 0) {
    row.skipped = "global batch size not given (a batch-size ramp)";
  }
  if (row.skipped) return row;
  row.setup = run.setup;
  row.note = likely_cause(run.model);
  predict_step_time(
      row,
      [&] {
        validate_model(run.model, ref.file);
        return run.model;
      },
      run.plan, platform);
  return row;
}

}  // namespace

ValidationSet validate_megatron_ci_step_time(const CiReference& ref, const Platform& platform) {
  ValidationSet set = step_time_set(
      ref.file, platform,
      "measured: iteration-time, the median over a CI run's logged steps after the first two "
      "(warm-up), seconds per global batch; predicted: trainsim's step time (analytic engine, "
      "symmetric replay) for the run's model, layout, batch and flags. Reported apart from the "
      "accuracy targets and never fitted: CI runs small models in deterministic mode");
  set.rows =
      parallel_rows(ref.rows(), ref.file, [&](const nlohmann::json& row, const std::string& path) {
        return megatron_step_row(ref, row, path, platform);
      });
  return set;
}

}  // namespace trainsim
