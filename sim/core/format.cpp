#include "sim/core/format.hpp"

#include <cmath>
#include <cstdio>

namespace trainsim {

std::string format_number(double x) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

std::string format_fixed(double x, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

std::string and_list(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

std::string escape_markup(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_seconds(double s) {
  double a = std::fabs(s);
  if (a >= 1.0 || a == 0.0) return format_fixed(s, 3) + " s";
  if (a >= 1e-3) return format_fixed(s * 1e3, 2) + " ms";
  return format_fixed(s * 1e6, 1) + " us";
}

std::string format_step_time(double s) {
  return std::fabs(s) >= 0.1 ? format_fixed(s, 3) + " s" : format_seconds(s);
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return format_fixed(bytes, u == 0 ? 0 : 2) + " " + units[u];
}

std::string format_flops(double flops) {
  const char* units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"};
  int u = 0;
  while (std::fabs(flops) >= 1000.0 && u < 6) {
    flops /= 1000.0;
    ++u;
  }
  return format_fixed(flops, u == 0 ? 0 : 1) + " " + units[u];
}

std::string format_grouped(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  int count = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (count > 0 && count % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++count;
  }
  if (n < 0) out.insert(out.begin(), '-');
  return out;
}

std::string pad_right(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace trainsim
