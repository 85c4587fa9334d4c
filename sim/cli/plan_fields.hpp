#pragma once
// The plan's schema: every field a scenario's "plan" object or a command-line flag sets, its type,
// bounds and choices, and how a value reaches the Plan, checked the same way from either source
// (errors name the flag, or the file and JSON path). Internal to sim/cli; scenario.hpp declares
// what other layers call (apply_plan_flags, plan_field_names).
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

// kParsed: a string with a syntax of its own, checked by the field's `check`.
enum class FieldType { kInt, kBool, kChoice, kString, kParsed, kReal };

struct PlanField {
  std::string name;
  FieldType type;
  IntRange range;
  std::vector<std::string_view> choices;
  std::function<void(Plan&, std::int64_t, const std::string&)> set;
  double Plan::*real = nullptr;  // kReal: the member set, within real_range
  RealRange real_range = {};
  std::function<void(const std::string& where, const std::string& value)> check = nullptr;
};

/// Every plan field, in the order reports and messages list them.
const std::vector<PlanField>& plan_fields();
/// Sets `field` from a flag's text; InputError naming the flag.
void apply_flag(Plan& plan, const PlanField& field, const std::string& value);
/// Sets `field` from the scenario's "plan" object; InputError naming the file and JSON path.
void apply_json(Plan& plan, const PlanField& field, JsonObject& o);

}  // namespace trainsim
