#pragma once
// `trainsim compare`: several plans side by side. Each scenario file named is one column as it
// is; each `--set KEY=VALUE[,KEY=VALUE...]` is a column of the first scenario with those plan
// fields changed. Step time, throughput, MFU, bubble, exposed communication and the fullest
// stage's memory per column, as text or JSON, and with --html one page with the columns' table
// and their pipeline diagrams stacked on one time axis.
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "sim/report/time_to_train.hpp"

namespace trainsim {

/// What `trainsim compare`'s arguments ask for.
struct CompareOptions {
  std::vector<std::string> scenarios;
  std::vector<std::string> sets;                   // "key=value,key=value"
  std::optional<std::string> engine = "analytic";  // SimGrid: one simulation per process
  std::string format = "text";
  std::optional<std::string> html;
  TrainingBudget budget;  // every column's
  bool help = false;
};

/// Parses the arguments of `compare` (after the command word); InputError naming the flag.
CompareOptions parse_compare_options(const std::vector<std::string>& args);

int compare_command(const std::vector<std::string>& args, std::ostream& out);
std::string compare_help();

}  // namespace trainsim
