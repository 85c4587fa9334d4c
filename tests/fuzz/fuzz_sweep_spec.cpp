// A sweep file (scenarios/sweeps/*.json), read as if it lay in scenarios/sweeps/, then its first
// plans and its last numbered and built as `trainsim sweep` builds them, each checked for being
// another point's plan.
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
    const auto build = [&](std::int64_t i) {
      const SweepPoint point = sweep_point(spec, i);
      const auto plan = sweep_plan(point);
      if (const auto* p = std::get_if<Plan>(&plan)) (void)same_plan_as(spec, point, *p);
    };
    for (std::int64_t i = 0; i < std::min<std::int64_t>(n, 16); ++i) build(i);
    if (n > 0) build(n - 1);
  });
}
