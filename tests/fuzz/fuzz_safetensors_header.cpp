// A whole safetensors file (8-byte header length, JSON header, data), written to a scratch file
// and read as `trainsim reshard --checkpoint` reads a checkpoint's files: nothing the file claims
// is trusted.
#include "sim/reshard/safetensors.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  static const auto path = fuzz::scratch_dir() / "model.safetensors";
  return fuzz::expect_input_errors([&] {
    fuzz::write_scratch("model.safetensors", fuzz::text_of(data, size));
    (void)read_safetensors_header(path, "model.safetensors");
  });
}
