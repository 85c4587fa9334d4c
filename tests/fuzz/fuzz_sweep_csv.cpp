// A sweep's CSV as `trainsim sweep` reads it back to resume: each line split (RFC 4180 quoting)
// and its plan index taken. Neither throws: a damaged line is simply not a complete row.
#include <algorithm>

#include "sim/sweep/sweep_csv.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim;
  std::string_view text = fuzz::text_of(data, size);
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, end);
    (void)split_csv_line(line);
    (void)sweep_csv_index(line);
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return 0;
}
