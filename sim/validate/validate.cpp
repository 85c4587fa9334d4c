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

namespace {

using SetReader = std::vector<ValidationSet> (*)(const std::filesystem::path&, const Platform&);

std::vector<ValidationSet> megatron_ci(const std::filesystem::path& reference,
                                       const Platform& platform) {
  const CiReference ref = load_ci_reference(reference);
  return {validate_megatron_ci_memory(ref, platform),
          validate_megatron_ci_step_time(ref, platform)};
}

template <ValidationSet (*Read)(const std::filesystem::path&, const Platform&)>
std::vector<ValidationSet> one_set(const std::filesystem::path& reference,
                                   const Platform& platform) {
  return {Read(reference, platform)};
}

// The reference sets trainsim knows, by what their file names hold.
struct KnownSet {
  const char* name_part;
  const char* described;
  SetReader read;
};
constexpr KnownSet kKnownSets[] = {
    {"megatron_lm_ci_golden_values",
     "Megatron-LM CI golden values, megatron_lm_ci_golden_values_*.json", megatron_ci},
    {"megatron_lm_readme", "Megatron-LM's README weak scaling, megatron_lm_readme_*.json",
     one_set<validate_megatron_readme_step_time>},
    {"nvidia_dgxc_benchmarking", "NVIDIA DGX Cloud benchmarks, nvidia_dgxc_benchmarking_*.json",
     one_set<validate_dgxc_step_time>},
    {"narayanan2021_megatron_a100", "Megatron-LM's SC21 tables, narayanan2021_megatron_a100_*.json",
     one_set<validate_sc21_step_time>},
    {"megatron_lm_moe_layer_perf",
     "Megatron-LM's MoE layer benchmark, megatron_lm_moe_layer_perf_*.json",
     one_set<validate_moe_layer_time>}};

const KnownSet* known_set(const std::filesystem::path& reference) {
  const std::string name = reference.filename().string();
  for (const KnownSet& set : kKnownSets) {
    if (name.find(set.name_part) != std::string::npos) return &set;
  }
  return nullptr;
}

}  // namespace

bool is_reference_set(const std::filesystem::path& reference) {
  return known_set(reference) != nullptr;
}

std::string known_reference_sets() {
  std::string known;
  for (const KnownSet& set : kKnownSets)
    known += (known.empty() ? "" : "; ") + std::string(set.described);
  return "a reference set trainsim knows (" + known + ")";
}

std::vector<ValidationSet> validate_reference(const std::filesystem::path& reference,
                                              const Platform& platform) {
  if (const KnownSet* set = known_set(reference)) return set->read(reference, platform);
  fail_input(reference.string(), "not " + known_reference_sets());
}

std::string reference_platform(const std::filesystem::path& reference) {
  return reference.filename().string().find("a100") != std::string::npos ? "a100-sxm-hdr"
                                                                         : "h100-sxm-ndr";
}

}  // namespace trainsim
