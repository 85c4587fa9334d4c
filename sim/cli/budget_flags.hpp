#pragma once
// The run's length and price as flags, which run, check, compare and sweep take alike: --tokens T
// (tokens to train on) and --price-per-gpu-hour P.
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

/// The two flags' help, as compare's --help lists them.
std::string budget_flags_help();

}  // namespace trainsim
