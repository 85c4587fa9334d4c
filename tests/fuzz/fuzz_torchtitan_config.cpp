// --torchtitan-config: a TOML config read by the TOML subset, then as torchtitan's catalog model
// and plan (with and without a GPU count for shard -1), the plan checked for the model as
// resolve_inputs() checks it.
#include "sim/core/toml_subset.hpp"
#include "sim/plan/torchtitan_config.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  trainsim::fuzz::warm_catalog();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::expect_input_errors([&] {
    const nlohmann::json config = parse_toml_subset(fuzz::text_of(data, size), "fuzz.toml");
    const Model& model = fuzz::catalog_model(torchtitan_catalog_model(config, "fuzz.toml"));
    const std::map<std::string, std::string> gpus = {{"gpus", "64"}};
    const TorchtitanPlan p = plan_from_torchtitan_config(
        config, "fuzz.toml", model, size % 2 != 0 ? gpus : std::map<std::string, std::string>{});
    fuzz::check_plan_of_fields(p.fields, p.origin, model);
  });
}
