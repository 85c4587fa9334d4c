#pragma once
// `trainsim compare`'s arguments: the scenarios, each `--set` column's changes, the engine, the
// output and the budget; and its --help.
#include <map>
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

/// One --set: "schedule=interleaved,vp=2" as plan field -> value, each key a plan field;
/// InputError naming --set otherwise.
std::map<std::string, std::string> parse_set(const std::string& set);

std::string compare_help();

}  // namespace trainsim
