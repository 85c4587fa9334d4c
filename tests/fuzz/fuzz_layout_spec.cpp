// trainsim reshard's --from / --to layouts ("tp=2,pp=1,dp=4,zero=1"), then their feasibility for a
// catalog model as reshard checks it.
#include "sim/reshard/layout_spec.hpp"
#include "tests/fuzz/fuzz_support.hpp"

// Catalog entries are read before the first input (fuzz_support.hpp, warm_catalog).
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  trainsim::fuzz::warm_catalog();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::expect_input_errors([&] {
    Plan base;
    base.seq_len = 4096;
    const Plan plan = parse_layout(std::string(fuzz::text_of(data, size)), "--from", base);
    (void)layout_text(plan);
    validate_layout(plan, fuzz::catalog_model("llama3.1-8b"),
                    fuzz::catalog_platform("h100-sxm-ndr"), "--from");
  });
}
