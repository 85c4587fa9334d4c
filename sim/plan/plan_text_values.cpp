// A plan field read from its text: a flag's value, or a cell of a sweep file's plan columns.
#include "sim/plan/plan_schema.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace trainsim {

// An integer field's value within its range, or the error naming `where`.
std::int64_t integer_value(const PlanField& field, const std::string& where,
                           const std::string& value) {
  std::int64_t v = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, v);
  // Digits beyond 64 bits are an integer out of range, not a malformed one.
  const bool too_large = ec == std::errc::result_out_of_range && ptr == end;
  if ((ec != std::errc() && !too_large) || ptr != end) {
    fail_input(where, "must be an integer, got '" + value + "'");
  }
  if (too_large || v < field.range.min || v > field.range.max) {
    std::string range = field.range.max == std::numeric_limits<std::int64_t>::max()
                            ? ">= " + std::to_string(field.range.min)
                            : "in [" + std::to_string(field.range.min) + ", " +
                                  std::to_string(field.range.max) + "]";
    const std::string beyond = !too_large               ? ""
                               : value.starts_with('-') ? " (less than -2^63)"
                                                        : " (more than 2^63 - 1)";
    fail_input(where, "must be an integer " + range + ", got " + value + beyond);
  }
  return v;
}

namespace {

// A choice field's value, which must be one of its choices.
void check_choice(const PlanField& field, const std::string& where, const std::string& value) {
  for (auto c : field.choices) {
    if (value == c) return;
  }
  std::string list;
  for (auto c : field.choices) list += (list.empty() ? "" : ", ") + std::string(c);
  fail_input(where, "must be one of {" + list + "}, got '" + value + "'" +
                        did_you_mean(value, {field.choices.begin(), field.choices.end()}));
}

}  // namespace

void set_from_text(Plan& plan, const PlanField& field, const std::string& where,
                   const std::string& value) {
  switch (field.type) {
    case FieldType::kInt:
      field.set(plan, integer_value(field, where, value), value);
      break;
    case FieldType::kBool:
      // A switch from the command line is "true" or "false"; so must a sweep's or --set's value be
      // ("yes" or 1 read as false would run another plan than the one written).
      if (value != "true" && value != "false") {
        fail_input(where, "must be true or false, got '" + value + "'");
      }
      field.set(plan, value == "true" ? 1 : 0, value);
      break;
    case FieldType::kChoice:
      check_choice(field, where, value);
      field.set(plan, 0, value);
      break;
    case FieldType::kString:
      if (value.empty()) fail_input(where, "must not be empty");
      field.set(plan, 0, value);
      break;
    case FieldType::kParsed:
      field.check(where, value);
      field.set(plan, 0, value);
      break;
    case FieldType::kReal: {
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v)) {
        fail_input(where, "must be a number, got '" + value + "'");
      }
      if (!field.real_range.holds(v)) {
        fail_input(where, "must be " + field.real_range.describe() + ", got " + value);
      }
      plan.*field.real = v;
      break;
    }
  }
}

Plan plan_from_text(const std::map<std::string, std::string>& values, const std::string& where) {
  Plan plan;
  for (const auto& field : plan_fields()) {
    if (!field.report) continue;  // not a column of the report's plan (gpus)
    const auto it = values.find(field.name);
    if (it != values.end() && !it->second.empty()) {
      set_from_text(plan, field, where + ": " + field.name, it->second);
    }
  }
  return plan;
}

}  // namespace trainsim
