#include "sim/validate/validate.hpp"

#include <string>
#include <vector>

#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/validate/megatron_ci_run.hpp"

namespace trainsim {

std::filesystem::path default_reference() {
  return data_dir() / "tests" / "validation" / "refdata" / "megatron_lm_ci_golden_values_h100.json";
}

std::vector<ValidationSet> validate_reference(const std::filesystem::path& reference,
                                              const Platform& platform) {
  const std::string name = reference.filename().string();
  if (name.find("megatron_lm_ci_golden_values") != std::string::npos) {
    const CiReference ref = load_ci_reference(reference);
    return {validate_megatron_ci_memory(ref, platform),
            validate_megatron_ci_step_time(ref, platform)};
  }
  if (name.find("megatron_lm_readme") != std::string::npos) {
    return {validate_megatron_readme_step_time(reference, platform)};
  }
  if (name.find("nvidia_dgxc_benchmarking") != std::string::npos) {
    return {validate_dgxc_step_time(reference, platform)};
  }
  if (name.find("narayanan2021_megatron_a100") != std::string::npos) {
    return {validate_sc21_step_time(reference, platform)};
  }
  if (name.find("megatron_lm_moe_layer_perf") != std::string::npos) {
    return {validate_moe_layer_time(reference, platform)};
  }
  fail_input(reference.string(),
             "not a reference set trainsim can validate against (known: Megatron-LM CI golden "
             "values, megatron_lm_ci_golden_values_*.json; Megatron-LM's README weak scaling, "
             "megatron_lm_readme_*.json; NVIDIA DGX Cloud benchmarks, "
             "nvidia_dgxc_benchmarking_*.json; Megatron-LM's SC21 tables, "
             "narayanan2021_megatron_a100_*.json; Megatron-LM's MoE layer benchmark, "
             "megatron_lm_moe_layer_perf_*.json)");
}

std::string reference_platform(const std::filesystem::path& reference) {
  return reference.filename().string().find("a100") != std::string::npos ? "a100-sxm-hdr"
                                                                         : "h100-sxm-ndr";
}

}  // namespace trainsim
