// A trainsim model file (models/*.json): parsed, checked, then counted as every command counts
// it (parameters per layer and in all, FLOPs per sample), so that a model the reader accepts is
// one the counts handle without overflow; and written back (--save-scenario's model file), it
// reads as the same model.
#include <cstdlib>

#include "sim/core/json_reader.hpp"
#include "sim/model/flops.hpp"
#include "sim/model/model_writer.hpp"
#include "sim/model/params.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::expect_input_errors([&] {
    const auto j = parse_json_text(fuzz::text_of(data, size), "fuzz/model.json");
    const Model m = parse_model_json(j, "fuzz/model.json");
    (void)count_params(m);
    (void)active_params(m);
    (void)model_flops_per_sample(m, 4096, true);
    const nlohmann::ordered_json written = model_json(m);
    const Model back = parse_model_json(nlohmann::json::parse(written.dump()), "fuzz/written.json");
    if (model_json(back) != written || total_params(back) != total_params(m)) std::abort();
  });
}
