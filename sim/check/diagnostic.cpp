#include "sim/check/diagnostic.hpp"

namespace trainsim {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
  }
  return "?";
}

}  // namespace trainsim
