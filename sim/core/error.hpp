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

/// Throws InputError("<where>: <what>").
[[noreturn]] inline void fail_input(std::string_view where, std::string_view what) {
  std::string msg(where);
  msg += ": ";
  msg += what;
  throw InputError(msg);
}

}  // namespace trainsim
