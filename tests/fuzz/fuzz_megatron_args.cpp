// Megatron-LM launch arguments (--megatron-args): split as a shell would, read into plan fields
// for a catalog model (a dense one, or an expert one where the text's first byte is odd) or, where
// its second bit is set, for the model its shape arguments build (its parameters counted), the
// fields set as resolve_inputs() sets them (each named by its argument), dp from the GPU count,
// and the plan checked for the model.
#include <cstdlib>

#include "sim/model/params.hpp"
#include "sim/plan/megatron_args.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  trainsim::fuzz::warm_catalog();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::expect_input_errors([&] {
    const std::string where = "--megatron-args";
    const LaunchCommand launch = parse_launch_command(fuzz::text_of(data, size), where);
    Model model =
        fuzz::catalog_model(size > 0 && (data[0] & 1) != 0 ? "mixtral-8x7b" : "llama3.1-70b");
    if (size > 0 && (data[0] & 2) != 0) {
      model = model_from_megatron_args(launch, "fuzz", where);
      if (total_params(model) <= 0 || active_params(model) > total_params(model)) std::abort();
    }
    const MegatronPlan m = plan_from_megatron_args(launch, model, where);
    fuzz::check_plan_of_fields(m.fields, m.origin, model);
  });
}
