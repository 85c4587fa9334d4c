// --nanotron-config: a YAML config read by the YAML subset, then as nanotron's plan and model,
// the plan checked for the model as resolve_inputs() checks it.
#include "sim/core/yaml_subset.hpp"
#include "sim/plan/nanotron_config.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  trainsim::fuzz::warm_catalog();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::expect_input_errors([&] {
    const nlohmann::json config = parse_yaml_subset(fuzz::text_of(data, size), "fuzz.yaml");
    const NanotronPlan p = plan_from_nanotron_config(config, "fuzz.yaml");
    const Model model = model_from_nanotron_config(config, "fuzz", "fuzz.yaml");
    fuzz::check_plan_of_fields(p.fields, p.origin, model);
  });
}
