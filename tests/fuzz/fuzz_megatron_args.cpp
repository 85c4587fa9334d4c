// Megatron-LM launch arguments (--megatron-args), resolved as `trainsim run --model M --gpus 64
// --megatron-args TEXT` resolves them: split as a shell would, read into plan fields and checked
// for the model (a dense one, or an expert one where the text's first byte is odd).
#include "sim/cli/scenario.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  (void)fuzz::light_catalog();  // sets TRAINSIM_DATA_DIR
  return fuzz::expect_input_errors([&] {
    InputRequest request;
    request.model = size > 0 && (data[0] & 1) != 0 ? "mixtral-8x7b" : "llama3.1-70b";
    request.megatron_args = std::string(fuzz::text_of(data, size));
    request.plan_flags["gpus"] = "64";
    (void)resolve_inputs(request);
  });
}
