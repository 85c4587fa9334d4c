#pragma once
#include <string_view>

namespace trainsim {
/// The trainsim version recorded in every report's provenance.
std::string_view version();
/// Version of the JSON report layout; bumped whenever a field changes meaning or is removed.
inline constexpr int kReportSchemaVersion = 2;
}  // namespace trainsim
