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

/// What one --set column changes of the first scenario.
struct ColumnChange {
  std::map<std::string, std::string> plan_flags;  // plan field -> value as typed
  std::optional<std::string> model;               // model=NAME|FILE
  std::optional<std::string> platform;            // platform=NAME|FILE
};

/// One --set: "schedule=interleaved,vp=2,platform=h200-sxm-ndr", each key a plan field, model or
/// platform, once; InputError naming --set otherwise.
ColumnChange parse_set(const std::string& set);

std::string compare_help();

}  // namespace trainsim
