#pragma once
// The inputs of a run as a scenario file: the model and platform (catalog names where they are
// catalog entries, else absolute paths), the plan fields the scenario, the flags and
// --megatron-args set (the others left to their defaults), the run's budget, and the figures
// measured on it (--measured-log's, a scenario's where the recipe is its own). A model built
// from --megatron-args is saved beside it as trainsim's model JSON. Run as a scenario,
// it prices the same plan; compare and sweep files start from it, validate checks it.
#include <string>

#include <nlohmann/json.hpp>

#include "sim/cli/scenario.hpp"

namespace trainsim {

/// The plan fields the inputs set (a scenario's keys, flags, Megatron-LM's arguments, dp from the
/// GPU count), as the report writes them; the rest keep their defaults, which follow the others
/// (etp as tp, the vocabulary multiple of the framework) when another field changes.
nlohmann::ordered_json plan_as_set(const ResolvedInputs& in);

/// Where a scenario saved at `scenario` keeps a model no file held (built from --megatron-args):
/// beside it, its name with ".model.json" for ".json" (run.json: run.model.json).
std::string model_file_beside(const std::string& scenario);

/// The scenario of `in` to be saved at `path` ("-": standard output), named after its file
/// ("scenario" on standard output), its description the command it was written by. A model no
/// file holds is named as the file model_file_beside(`path`), which the caller writes.
nlohmann::ordered_json scenario_of(const ResolvedInputs& in, const std::string& written_from,
                                   const std::string& path);

}  // namespace trainsim
