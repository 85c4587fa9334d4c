#pragma once
// The run's length and price as run, compare and sweep take them alike: the flags --tokens T
// (tokens to train on) and --price-per-gpu-hour P, and a scenario's or sweep file's "tokens" and
// "price_per_gpu_hour", which the flags override.
#include <string>

#include "sim/core/json_reader.hpp"
#include "sim/report/time_to_train.hpp"

namespace trainsim {

/// What a budget's numbers must be, in a file as from a flag.
RealRange budget_tokens_range();
RealRange budget_price_range();

/// Sets the budget's field for `flag` (--tokens or --price-per-gpu-hour) from its text; InputError
/// naming the flag where the text is not a number in the field's range.
void set_budget_flag(TrainingBudget& budget, const std::string& flag, const std::string& value);

/// A scenario's or sweep file's "tokens" and "price_per_gpu_hour", each optional, in those ranges.
TrainingBudget read_budget(JsonObject& o);

/// The flags' budget over a file's: each value the flags give, else the file's.
TrainingBudget over(const TrainingBudget& flags, const TrainingBudget& file);

/// The two flags' help, as compare's --help lists them.
std::string budget_flags_help();

}  // namespace trainsim
