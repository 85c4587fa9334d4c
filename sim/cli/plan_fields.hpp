#pragma once
// Reading the plan schema's fields (sim/plan/plan_schema.hpp) from a flag's text or a scenario's
// "plan" object, checked the same way from either source (errors name the flag, or the file and
// JSON path). Internal to sim/cli; scenario.hpp declares what other layers call
// (apply_plan_flags).
#include <string>

#include "sim/core/json_reader.hpp"
#include "sim/plan/plan_schema.hpp"

namespace trainsim {

/// Sets `field` from a flag's text; InputError naming the flag.
void apply_flag(Plan& plan, const PlanField& field, const std::string& value);
/// Sets `field` from the scenario's "plan" object; InputError naming the file and JSON path.
void apply_json(Plan& plan, const PlanField& field, JsonObject& o);

}  // namespace trainsim
