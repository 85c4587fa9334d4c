#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim {
/// Shortest decimal that round-trips ("0.5", "1e-06"); used in messages.
std::string format_number(double x);
/// Fixed decimals.
std::string format_fixed(double x, int decimals);
/// "1.23 s", "45.6 ms", "789 us".
std::string format_seconds(double s);
/// A step time as the reports write it: "4.540 s" to the millisecond from 0.1 s up, shorter ones
/// (a toy model, a teaching scenario) as format_seconds, which "0.000 s" would hide.
std::string format_step_time(double s);
/// "80.0 GiB", "512 MiB".
std::string format_bytes(double bytes);
/// "7.3 TFLOP", "2.1 GFLOP".
std::string format_flops(double flops);
/// "8,030,261,248".
std::string format_grouped(std::int64_t n);
/// The items with `separator` between each two ("a; b; c").
std::string join(const std::vector<std::string>& items, std::string_view separator);
/// The items as a sentence lists them: "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& items);
/// Text for an HTML or SVG page: &, <, > and " as entities.
std::string escape_markup(std::string_view text);
/// A text table's column: `s` padded with spaces to `width` (left as it is when longer).
std::string pad_right(std::string s, std::size_t width);
}  // namespace trainsim
