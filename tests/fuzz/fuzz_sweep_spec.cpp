// A sweep file (scenarios/sweeps/*.json), read as if it lay in scenarios/sweeps/, then its first
// plans and its last numbered and built as `trainsim sweep` builds them.
#include <algorithm>

#include "sim/cli/sweep_spec.hpp"
#include "sim/core/catalog.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  static const auto file = data_dir() / "scenarios" / "sweeps" / "fuzz.json";
  return fuzz::expect_input_errors([&] {
    const SweepSpec spec = parse_sweep_spec(fuzz::text_of(data, size), file);
    const std::int64_t n = sweep_size(spec);
    for (std::int64_t i = 0; i < std::min<std::int64_t>(n, 16); ++i) {
      (void)sweep_plan(sweep_point(spec, i));
    }
    if (n > 0) (void)sweep_plan(sweep_point(spec, n - 1));
  });
}
