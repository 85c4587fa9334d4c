// trainsim reshard's --from / --to layouts ("tp=2,pp=1,dp=4,zero=1"), then their feasibility for a
// catalog model as reshard checks it: a mixture-of-experts model (expert parallelism, expert TP),
// where small enough every tensor placed and the conversion to itself planned, then a dense one.
#include "sim/reshard/conversion.hpp"
#include "sim/reshard/layout_spec.hpp"
#include "sim/reshard/shards.hpp"
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
    const Platform& h100 = fuzz::catalog_platform("h100-sxm-ndr");
    fuzz::expect_input_errors([&] {
      const Model& moe = fuzz::catalog_model("mixtral-8x7b");
      validate_layout(plan, moe, h100, "--from");
      if (plan.world_size() > 16) return;  // a few milliseconds an input
      const LayoutShards l = shard_layout(moe, h100, plan, layout_origin("--from"));
      (void)plan_conversion(l, l, h100);
    });
    validate_layout(plan, fuzz::catalog_model("llama3.1-8b"), h100, "--from");
  });
}
