#pragma once
// The fixed split of step-time rows into the half that fits a platform's calibration and the
// half that checks it: by the parity of the first byte of the SHA-256 of the row's name, so that
// no choice of rows can favour a model.
#include <string>

#include "sim/core/hash.hpp"

namespace trainsim {

/// "fit" or "check".
inline std::string split_half(const std::string& row_name) {
  const std::string h = sha256_hex(row_name);
  return std::stoi(h.substr(0, 2), nullptr, 16) % 2 == 0 ? "fit" : "check";
}

}  // namespace trainsim
