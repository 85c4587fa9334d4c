// A scenario file, resolved as `trainsim run SCENARIO.json` resolves it: its model and platform
// looked up (the catalog of light_catalog(), the scenario lying in its scenarios/seeds/ so that
// the seed scenarios' relative model paths resolve), the plan read and checked for them.
#include "sim/cli/scenario.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  static const auto path = fuzz::light_catalog() / "scenarios" / "seeds" / "fuzz.json";
  return fuzz::expect_input_errors([&] {
    fuzz::write_scratch("catalog/scenarios/seeds/fuzz.json", fuzz::text_of(data, size));
    InputRequest request;
    request.scenario = path.string();
    (void)resolve_inputs(request);
  });
}
