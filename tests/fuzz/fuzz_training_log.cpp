// --measured-log: a training log's text read for its iteration times (or throughputs) and memory
// reports, and the figures it gives (the median after the warm-up, the source's words) computed.
#include <cmath>
#include <stdexcept>

#include "sim/validate/training_log.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  return fuzz::expect_input_errors([&] {
    const TrainingLog log = read_training_log(std::string(fuzz::text_of(data, size)), "f.log");
    const double figure = log.gives_throughput() ? log.throughput_per_gpu() : log.step_time_s();
    if (log.has_step() && !(std::isfinite(figure) && figure > 0)) {
      throw std::logic_error("a logged step time or throughput that is not a positive number");
    }
    (void)log.source("f.log");
  });
}
