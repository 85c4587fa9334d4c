#pragma once
// The plan's schema, once: every field a scenario's "plan" object or a command-line flag sets, its
// type, bounds and choices, how a value reaches the Plan, the flag's help, and what a report's
// plan writes back. The scenario reader and the flags (sim/cli), the JSON report's plan
// (sim/report) and the sweep file's plan columns (sim/sweep) all read this one table: adding a
// field is adding a row.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

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
  /// The flag: --NAME VALUE_NAME, or for kBool a switch, --NAME setting true or, where
  /// `negated`, --no-NAME setting false (the field then defaults to on).
  std::string value_name = {};
  bool negated = false;
  std::string help = {};
  /// The field's value as a report's plan writes it (resolved: etp as tp where unset), null
  /// where the report leaves it out (a default that changes nothing, an option of another
  /// mode). Unset: never written (gpus, which the report gives at its top level).
  std::function<nlohmann::ordered_json(const Plan&)> report = nullptr;
  /// What a text report's plan options line says of the field ("overlap grad reduce"), empty
  /// where it says nothing (a default, an option of another mode). Unset for the sizes the plan's
  /// first line gives (tp, pp, ..., precision, schedule) and the fields another row describes.
  std::function<std::string(const Plan&)> describe = nullptr;
  /// Its words in a sweep summary's one-line plan label ("tp 4", "sp", "grad-overlap"), empty
  /// where the label leaves it out; unset for the fields a label never shows.
  std::function<std::string(const Plan&)> label = nullptr;
  /// Why the field's value, whatever it is, changes nothing in this plan, which then runs as with
  /// the field's default (--sp at tp 1, --cp-comm-type at cp 1); empty where it acts. Unset for the
  /// fields that always act, or that a rule refuses where they could not.
  std::function<std::string(const Plan&)> unused = nullptr;
  /// With `unused`: what makes the field act, as check's <field>-unused info advises beside
  /// dropping the flag ("give --tp 2 or more to split the sequence over a TP group").
  std::string unused_fix = {};
};

/// Every plan field, in the order --help, messages and reports list them.
const std::vector<PlanField>& plan_fields();

/// The field names, in the table's order.
const std::vector<std::string>& plan_field_names();

/// Sets `field` from its text, as a flag or a sweep file's cell gives it (a switch "true" or
/// "false"); InputError naming `where` where the text is not a value of the field.
void set_from_text(Plan& plan, const PlanField& field, const std::string& where,
                   const std::string& value);

/// An integer field's value from its text, within the field's range, as set_from_text reads it;
/// InputError naming `where` otherwise.
std::int64_t integer_value(const PlanField& field, const std::string& where,
                           const std::string& value);

/// A plan from the report's plan values as text (a sweep file's plan columns): each field given
/// and not blank is set, the rest keep their defaults; InputError naming `where` and the field.
Plan plan_from_text(const std::map<std::string, std::string>& values, const std::string& where);

/// The plan as a report writes it: each field the table reports, in the table's order, left out
/// where its report is null. Read back as a scenario's plan it gives the same run.
nlohmann::ordered_json plan_json(const Plan& plan);

/// Every key plan_json can write, in its order (the sweep file's plan columns).
const std::vector<std::string>& plan_json_keys();

/// The plan's options as a text report's second plan line lists them, in the table's order.
std::vector<std::string> plan_options_text(const Plan& plan);

/// A switch's flag: --NAME, or --no-NAME for a field that defaults to on (`negated`). It sets the
/// field to true, or false where negated; the other value is the default, which no flag writes.
std::string switch_flag(const PlanField& field);

/// The field named `name`; nullptr where no field has that name.
const PlanField* find_plan_field(std::string_view name);

/// Why `field` changes nothing in `plan` (its `unused`), empty where it acts or has no such rule.
std::string unused_reason(const PlanField& field, const Plan& plan);

/// Whether `value` (as its flag takes it) sets `field` to its default (its report equal to a
/// default plan's); false for a value the field does not take.
bool is_default_value(const PlanField& field, const std::string& value);

/// The plan in one line, as a sweep summary labels it: its fields' labels in the table's order.
std::string plan_label(const Plan& plan);

}  // namespace trainsim
