#pragma once
// A run of Megatron-LM's CI on DGX H100 (a row of megatron_lm_ci_golden_values_h100.json,
// completed by the launch arguments of megatron_lm_ci_model_args_h100.json beside it) as
// trainsim's model and plan: what the CI's memory and step-time comparisons share.
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

/// The golden values and, where it exists, the launch-argument supplement beside them.
struct CiReference {
  std::string file;
  nlohmann::json golden;
  std::string supplement_file;
  std::optional<nlohmann::json> supplement;
  const nlohmann::json& rows() const;
};

/// InputError naming the file when it is not Megatron-LM CI golden values.
CiReference load_ci_reference(const std::filesystem::path& reference);

struct CiRun {
  std::string name;
  std::optional<std::string> skipped;  // why trainsim cannot express the run
  std::optional<std::int64_t> gpus;    // the run's GPU count, when the row gives it
  Model model;
  Plan plan;          // on the row's GPU count, or one node of 8 when it gives none
  std::string setup;  // the run in a few words
};

/// The row at `path` (`$.rows[i]`) as a run, or skipped with the reason. InputError naming the
/// JSON path when a field the run needs is malformed.
CiRun read_ci_run(const CiReference& ref, const nlohmann::json& row, const std::string& path);

/// The CI's two reference sets, from one reading of the files: peak memory
/// (megatron_ci_memory.cpp) and iteration time (megatron_ci_step_time.cpp).
ValidationSet validate_megatron_ci_memory(const CiReference& ref, const Platform& platform);
ValidationSet validate_megatron_ci_step_time(const CiReference& ref, const Platform& platform);

}  // namespace trainsim
