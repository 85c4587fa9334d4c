#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace trainsim {

/// Exit codes of the command line (a stable contract).
inline constexpr int kExitOk = 0;
inline constexpr int kExitDiagnostics = 1;  // error-level diagnostics (check, or run --strict)
inline constexpr int kExitBadInput = 2;     // bad input or usage
inline constexpr int kExitInternal = 70;    // a bug in trainsim

/// Runs the trainsim command line; returns the exit code. Never exits by itself.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace trainsim
