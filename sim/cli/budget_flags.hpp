#pragma once
// The run's length, price and failures as run, compare and sweep take them alike: the flags
// --tokens T (tokens to train on), --price-per-gpu-hour P, --gpu-mtbf-hours H, --checkpoint-s C
// and --restart-s R, and a scenario's or sweep file's keys of the same names ("tokens",
// "price_per_gpu_hour", ...), which the flags override.
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/report/time_to_train.hpp"

namespace trainsim {

/// `value` as a number in `range`; InputError naming `flag` where it is not one (the check of
/// every real-valued flag of the budget, and of sweep's --deadline-days).
double real_flag(const std::string& flag, const std::string& value, const RealRange& range);

/// InputError naming `where` (a flag or a file's key): what it sets applies to a token budget,
/// and neither the flags nor the file give one.
[[noreturn]] void fail_without_tokens(const std::string& where);

/// A scenario's or sweep file's "tokens", "price_per_gpu_hour", "gpu_mtbf_hours", "checkpoint_s"
/// and "restart_s", each optional, in the flags' ranges.
TrainingBudget read_budget(JsonObject& o);

/// The flags' budget over a file's: each value the flags give, else the file's. InputError naming
/// the first flag other than --tokens given where neither gives tokens: a price or a failure rate
/// on the command line with no token budget to apply to is a mistake, not a request (a file may
/// carry them for the runs that give one).
TrainingBudget over(const TrainingBudget& flags, const TrainingBudget& file);

/// The flags as a group of a command's options (boost::program_options) under `caption`, each
/// with its help.
boost::program_options::options_description budget_options(const std::string& caption);

/// The budget the flags of `vm` give (those of budget_options()); InputError naming the
/// flag where its text is not a number in the field's range.
TrainingBudget budget_of(const boost::program_options::variables_map& vm);

/// Every field of the budget as text ("tokens=1e+12 price_per_gpu_hour=none ..."), exact: what a
/// resumable sweep's fingerprint holds.
std::string budget_text(const TrainingBudget& budget);

}  // namespace trainsim
