#include "sim/cli/outputs.hpp"

#include <algorithm>
#include <ostream>

#include "sim/core/files.hpp"
#include "sim/core/interrupt.hpp"

namespace trainsim {

void Outputs::add(const std::string& flag, const std::optional<std::string>& path) {
  if (path) outputs_.emplace_back(flag, *path);
}

void Outputs::announce() const {
  refuse_shared_outputs(outputs_);
  for (const auto& [flag, path] : outputs_) {
    if (path != "-") expect_output(path);
  }
}

bool Outputs::to_stdout() const {
  return std::any_of(outputs_.begin(), outputs_.end(),
                     [](const auto& output) { return output.second == "-"; });
}

void Outputs::write(const std::string& path, std::string_view content, std::ostream& out) {
  if (path == "-") {
    out << content;
    return;
  }
  write_expected_output(path, content);
}

}  // namespace trainsim
