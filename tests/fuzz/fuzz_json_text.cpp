// parse_json_text: any bytes. Malformed JSON, a duplicate key or a number out of range must be an
// InputError with the position or JSON path.
#include "sim/core/json_reader.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return trainsim::fuzz::expect_input_errors([&] {
    const auto j = trainsim::parse_json_text(trainsim::fuzz::text_of(data, size), "fuzz.json");
    // What error messages print of a value.
    (void)trainsim::json_type_name(j);
    (void)j.dump();
  });
}
