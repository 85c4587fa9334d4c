// A Hugging Face config.json, read as `--model path/config.json` reads it: the model class's keys
// mapped onto trainsim's model, checked, then counted (parameters, FLOPs per sample).
#include "sim/core/json_reader.hpp"
#include "sim/model/flops.hpp"
#include "sim/model/params.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::expect_input_errors([&] {
    const auto j = parse_json_text(fuzz::text_of(data, size), "fuzz/config.json");
    const Model m = parse_hf_config(j, "fuzz/config.json");
    (void)count_params(m);
    (void)active_params(m);
    (void)model_flops_per_sample(m, 4096, true);
  });
}
