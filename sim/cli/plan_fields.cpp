#include "sim/cli/plan_fields.hpp"

#include <map>

#include "sim/cli/scenario.hpp"

namespace trainsim {

void apply_flag(Plan& plan, const PlanField& field, const std::string& value) {
  set_from_text(plan, field, flag_of(field.name), value);
}

void apply_json(Plan& plan, const PlanField& field, JsonObject& o) {
  switch (field.type) {
    case FieldType::kInt:
      field.set(plan, o.integer(field.name, field.range), "");
      break;
    case FieldType::kBool:
      field.set(plan, o.boolean(field.name) ? 1 : 0, "");
      break;
    case FieldType::kChoice:
      field.set(plan, 0, o.choice(field.name, field.choices));
      break;
    case FieldType::kString:
      field.set(plan, 0, o.string(field.name));
      break;
    case FieldType::kParsed: {
      const std::string value = o.string(field.name);
      field.check(o.where(field.name), value);
      field.set(plan, 0, value);
      break;
    }
    case FieldType::kReal:
      plan.*field.real = o.number(field.name, field.real_range);
      break;
  }
}

void apply_plan_flags(Plan& plan, const std::map<std::string, std::string>& flags) {
  for (const auto& field : plan_fields()) {
    auto it = flags.find(field.name);
    if (it != flags.end()) apply_flag(plan, field, it->second);
  }
}

}  // namespace trainsim
