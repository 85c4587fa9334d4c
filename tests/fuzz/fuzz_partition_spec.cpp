// --partition: the rule or Megatron-LM layout string, then the partition it builds for a
// catalog model. The first byte picks the model (its value mod 4) and the pipeline size (1 + its
// value / 4 mod 16); the rest is the text.
#include <array>

#include "sim/evaluate/evaluate.hpp"
#include "sim/plan/partition.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

// Dense, MoE, MLA with dense first layers, learned positions.
constexpr std::array<const char*, 4> kModels = {"llama3.1-8b", "mixtral-8x7b", "deepseek-v3",
                                                "gpt3-175b"};

}  // namespace

// Catalog entries are read before the first input (fuzz_support.hpp, warm_catalog).
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  trainsim::fuzz::warm_catalog();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  if (size < 1) return 0;
  return fuzz::expect_input_errors([&] {
    const std::string text(fuzz::text_of(data + 1, size - 1));
    (void)parse_partition_spec(text, "--partition");
    const Model& model = fuzz::catalog_model(kModels[data[0] % kModels.size()]);
    const Platform& platform = fuzz::catalog_platform("h100-sxm-ndr");
    Plan plan;
    plan.partition = text;
    plan.seq_len = 4096;
    plan.pp = 1 + (data[0] / kModels.size()) % 16;
    validate_plan(plan, model, platform, {});
    (void)build_partition(model, platform, plan, {});
  });
}
