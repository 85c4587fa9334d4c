#pragma once
// A model as trainsim's own model JSON (models/*.json): what parse_model_json reads back as the
// same model, for a model no file holds (one built from a launch's arguments).
#include <nlohmann/json.hpp>

#include "sim/model/model.hpp"

namespace trainsim {

/// The model's JSON: every key parse_model_json reads, optional ones only where they differ from
/// its default. Keys the file format does not hold (UnmodelledKey notes) are left out.
nlohmann::ordered_json model_json(const Model& m);

}  // namespace trainsim
