// A platform file (platforms/*.json), then the cluster topology built on it for 64 GPUs. Its
// kernel_database names a file next to "fuzz/platform.json", which does not exist: the kernel
// database reader has its own target.
#include "sim/core/json_reader.hpp"
#include "sim/platform/topology.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::expect_input_errors([&] {
    const auto j = parse_json_text(fuzz::text_of(data, size), "fuzz/platform.json");
    const Platform p = parse_platform_json(j, "fuzz/platform.json");
    const Topology topology(p, 64);
    (void)topology.num_nodes();
  });
}
