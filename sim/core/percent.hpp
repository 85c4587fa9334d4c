#pragma once
// A fraction as the reports print it: "12.3 %", and with its sign, "+12.3 %" / "-2.0 %".
#include <string>

#include "sim/core/format.hpp"

namespace trainsim {

inline std::string format_percent(double fraction) {
  return format_fixed(100.0 * fraction, 1) + " %";
}

/// With its sign: "+" unless the one-decimal figure already starts with "-".
inline std::string format_signed_percent(double fraction) {
  std::string s = format_fixed(100.0 * fraction, 1);
  if (s[0] != '-') s = "+" + s;
  return s + " %";
}

}  // namespace trainsim
