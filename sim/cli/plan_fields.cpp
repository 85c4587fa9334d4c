#include "sim/cli/plan_fields.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>

#include "sim/cli/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"

namespace trainsim {

namespace {

// An integer flag's value within its field's range, or the error naming the flag.
std::int64_t integer_value(const PlanField& field, const std::string& flag,
                           const std::string& value) {
  std::int64_t v = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, v);
  // Digits beyond 64 bits are an integer out of range, not a malformed one.
  const bool too_large = ec == std::errc::result_out_of_range && ptr == end;
  if ((ec != std::errc() && !too_large) || ptr != end) {
    fail_input(flag, "must be an integer, got '" + value + "'");
  }
  if (too_large || v < field.range.min || v > field.range.max) {
    std::string range = field.range.max == std::numeric_limits<std::int64_t>::max()
                            ? ">= " + std::to_string(field.range.min)
                            : "in [" + std::to_string(field.range.min) + ", " +
                                  std::to_string(field.range.max) + "]";
    const std::string beyond = !too_large               ? ""
                               : value.starts_with('-') ? " (less than -2^63)"
                                                        : " (more than 2^63 - 1)";
    fail_input(flag, "must be an integer " + range + ", got " + value + beyond);
  }
  return v;
}

// A choice flag's value, which must be one of the field's choices.
void check_choice(const PlanField& field, const std::string& flag, const std::string& value) {
  for (auto c : field.choices) {
    if (value == c) return;
  }
  std::string list;
  for (auto c : field.choices) list += (list.empty() ? "" : ", ") + std::string(c);
  fail_input(flag, "must be one of {" + list + "}, got '" + value + "'");
}

}  // namespace

void apply_flag(Plan& plan, const PlanField& field, const std::string& value) {
  const std::string flag = flag_of(field.name);
  switch (field.type) {
    case FieldType::kInt:
      field.set(plan, integer_value(field, flag, value), value);
      break;
    case FieldType::kBool:
      // A switch from the command line is "true" or "false"; so must a sweep's or --set's value be
      // ("yes" or 1 read as false would run another plan than the one written).
      if (value != "true" && value != "false") {
        fail_input(flag, "must be true or false, got '" + value + "'");
      }
      field.set(plan, value == "true" ? 1 : 0, value);
      break;
    case FieldType::kChoice:
      check_choice(field, flag, value);
      field.set(plan, 0, value);
      break;
    case FieldType::kString:
      if (value.empty()) fail_input(flag, "must not be empty");
      field.set(plan, 0, value);
      break;
    case FieldType::kParsed:
      field.check(flag, value);
      field.set(plan, 0, value);
      break;
    case FieldType::kReal: {
      char* end = nullptr;
      const double v = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v)) {
        fail_input(flag, "must be a number, got '" + value + "'");
      }
      if (!field.real_range.holds(v)) {
        fail_input(flag, "must be " + field.real_range.describe() + ", got " + value);
      }
      plan.*field.real = v;
      break;
    }
  }
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
