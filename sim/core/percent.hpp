#pragma once
// A fraction as the reports print it: "12.3 %", and with its sign, "+12.3 %" / "-2.0 %"; a
// signed figure of one decimal.
#include <string>

#include "sim/core/format.hpp"

namespace trainsim {

inline std::string format_percent(double fraction) {
  return format_fixed(100.0 * fraction, 1) + " %";
}

/// One decimal with its sign: "+" unless the figure already starts with "-" ("+3.2", "-0.0").
inline std::string format_signed_fixed(double x) {
  std::string s = format_fixed(x, 1);
  if (s[0] != '-') s = "+" + s;
  return s;
}

inline std::string format_signed_percent(double fraction) {
  return format_signed_fixed(100.0 * fraction) + " %";
}

}  // namespace trainsim
