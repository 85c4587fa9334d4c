#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace trainsim {

enum class Severity { kError, kWarning, kInfo };
const char* to_string(Severity s);

/// A finding about a plan: what is wrong in plain words and a concrete alternative.
struct Diagnostic {
  std::string id;
  Severity severity = Severity::kInfo;
  std::optional<std::int64_t> stage;
  std::string message;
  std::string fix;
};

}  // namespace trainsim
