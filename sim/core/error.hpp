#pragma once
// Failure kinds: InputError is bad user input (exit code 2); plan problems are diagnostics;
// internal bugs are assertions. Library code never exits.
#include <stdexcept>
#include <string>
#include <string_view>

namespace trainsim {

/// Bad input. The message is one line that names the file and JSON path, or the flag, at fault.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws InputError("<where>: <what>"), control characters escaped (\n, \t, \u001b, ...): a
/// value quoted from a file or a flag must not break the message's one line.
[[noreturn]] inline void fail_input(std::string_view where, std::string_view what) {
  std::string msg;
  for (const std::string_view part : {where, std::string_view(": "), what}) {
    for (const char c : part) {
      const auto u = static_cast<unsigned char>(c);
      if (u >= 0x20 && u != 0x7f) {
        msg += c;
      } else if (c == '\n') {
        msg += "\\n";
      } else if (c == '\r') {
        msg += "\\r";
      } else if (c == '\t') {
        msg += "\\t";
      } else {
        static constexpr char kHex[] = "0123456789abcdef";
        msg += "\\u00";
        msg += kHex[u >> 4];
        msg += kHex[u & 0xf];
      }
    }
  }
  throw InputError(msg);
}

}  // namespace trainsim
