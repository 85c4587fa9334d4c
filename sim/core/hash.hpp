#pragma once
#include <string>
#include <string_view>

namespace trainsim {
/// SHA-256 of `data`, as 64 lowercase hex digits (FIPS 180-4). Used for input provenance.
std::string sha256_hex(std::string_view data);
}  // namespace trainsim
