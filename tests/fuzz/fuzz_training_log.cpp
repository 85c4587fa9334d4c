// --measured-log: a training log's text read for its iteration times and memory reports, and the
// figures it gives (the median after the warm-up, the source's words) computed.
#include <cmath>
#include <stdexcept>

#include "sim/validate/training_log.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::expect_input_errors([&] {
    const TrainingLog log = read_training_log(std::string(fuzz::text_of(data, size)), "f.log");
    if (log.has_step() && !(std::isfinite(log.step_time_s()) && log.step_time_s() > 0)) {
      throw std::logic_error("a logged step time that is not a positive number");
    }
    (void)log.source("f.log");
  });
}
