#include "sim/plan/plan_schema.hpp"

#include "sim/core/error.hpp"
#include "sim/plan/plan_field_table.hpp"

namespace trainsim {

const std::vector<PlanField>& plan_fields() {
  static const std::vector<PlanField> fields = [] {
    FieldTable t;
    parallel_fields(t);
    batch_and_schedule_fields(t);
    memory_and_overlap_fields(t);
    return std::move(t.fields);
  }();
  return fields;
}

const std::vector<std::string>& plan_field_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& f : plan_fields()) n.push_back(f.name);
    return n;
  }();
  return names;
}

nlohmann::ordered_json plan_json(const Plan& plan) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& f : plan_fields()) {
    if (!f.report) continue;
    auto v = f.report(plan);
    if (!v.is_null()) j[f.name] = std::move(v);
  }
  return j;
}

std::vector<std::string> plan_options_text(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& f : plan_fields()) {
    if (!f.describe) continue;
    if (auto text = f.describe(plan); !text.empty()) out.push_back(std::move(text));
  }
  return out;
}

std::string switch_flag(const PlanField& field) {
  return field.negated ? "--no-" + flag_of(field.name).substr(2) : flag_of(field.name);
}

const PlanField* find_plan_field(std::string_view name) {
  for (const auto& f : plan_fields()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string unused_reason(const PlanField& field, const Plan& plan) {
  return field.unused ? field.unused(plan) : std::string();
}

bool is_default_value(const PlanField& field, const std::string& value) {
  if (!field.report) return false;
  Plan p;
  try {
    set_from_text(p, field, field.name, value);
  } catch (const InputError&) {
    return false;
  }
  return field.report(p) == field.report(Plan{});
}

std::string plan_label(const Plan& plan) {
  std::string out;
  for (const auto& f : plan_fields()) {
    if (!f.label) continue;
    if (const auto words = f.label(plan); !words.empty()) out += (out.empty() ? "" : " ") + words;
  }
  return out;
}

const std::vector<std::string>& plan_json_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& f : plan_fields()) {
      if (f.report) k.push_back(f.name);
    }
    return k;
  }();
  return keys;
}

}  // namespace trainsim
