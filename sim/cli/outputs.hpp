#pragma once
// The files a command writes, named by their flags: checked together before any work (two
// outputs on one path are refused), announced to the interrupt handler, and written through
// write_output; "-" is standard output.
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainsim {

class Outputs {
 public:
  /// An output of `flag` at `path` (nothing when the flag was not given).
  void add(const std::string& flag, const std::optional<std::string>& path);
  /// Refuses two outputs on one path and tells the interrupt handler what is to come.
  void announce() const;
  /// Whether an output goes to standard output (then the report does not).
  bool to_stdout() const;
  /// Writes one announced output: to `out` for "-", else to the file.
  static void write(const std::string& path, std::string_view content, std::ostream& out);

 private:
  std::vector<std::pair<std::string, std::string>> outputs_;
};

}  // namespace trainsim
