#pragma once
// Internal to sim/plan/launch_script: a test's value as bash would find it, where the script's
// own variables decide it ([[ ]], [ ] and test: string comparisons, patterns in [[ ]], -z, -n,
// integer comparisons, true and false, joined by && and || or -a and -o, negated by !), and
// unknown where they do not (files, the environment, other commands' statuses).
#include <string>
#include <vector>

#include "sim/plan/shell_expand.hpp"
#include "sim/plan/shell_lexer.hpp"

namespace trainsim {

enum class Truth { kFalse, kTrue, kUnknown };

Truth negate(Truth a);

/// Whether a command starting with this bare word is one test_status reads ([[, [, test, true,
/// false, or one negated with !).
bool is_test_command(const std::string& first_word);

/// The status of a command list of tests (left to right, as bash joins && and ||; after `;` the
/// last command's). Any command other than a test has an unknown status.
Truth test_status(const std::vector<Token>& test, const ShellVariables& vars);

}  // namespace trainsim
