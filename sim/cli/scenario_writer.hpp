#pragma once
// The inputs of a run as a scenario file: the model and platform (catalog names where they are
// catalog entries, else absolute paths), the plan fields the scenario, the flags and
// --megatron-args set (the others left to their defaults), and the run's budget. Run as a scenario,
// it prices the same plan; compare and sweep files start from it.
#include <string>

#include <nlohmann/json.hpp>

#include "sim/cli/scenario.hpp"

namespace trainsim {

/// The scenario of `in`, named `name`, its description the command it was written by.
nlohmann::ordered_json scenario_of(const ResolvedInputs& in, const std::string& name,
                                   const std::string& written_from);

}  // namespace trainsim
