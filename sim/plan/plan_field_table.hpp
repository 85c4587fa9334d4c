#pragma once
// How the plan schema's rows are written (internal to sim/plan): one call per field, by kind,
// giving its flag's help; a member-backed row reports the member as it is unless the caller
// gives the row another report.
#include <initializer_list>
#include <limits>
#include <utility>

#include "sim/plan/plan_schema.hpp"

namespace trainsim {

class FieldTable {
 public:
  using Set = std::function<void(Plan&, const std::string&)>;
  using Check = std::function<void(const std::string& where, const std::string& value)>;
  using Report = std::function<nlohmann::ordered_json(const Plan&)>;
  using Describe = std::function<std::string(const Plan&)>;

  // Each returns its row, valid until the next is added.
  PlanField& integer(std::string name, IntRange range, std::int64_t Plan::*member,
                     std::string value_name, std::string help) {
    return add({std::move(name),
                FieldType::kInt,
                range,
                {},
                [member](Plan& p, std::int64_t v, const std::string&) { p.*member = v; }},
               std::move(value_name), std::move(help), of(member));
  }
  PlanField& flag(std::string name, bool Plan::*member, std::string help) {
    return add({std::move(name),
                FieldType::kBool,
                {},
                {},
                [member](Plan& p, std::int64_t v, const std::string&) { p.*member = v != 0; }},
               "", std::move(help), of(member));
  }
  PlanField& real(std::string name, double Plan::*member, RealRange range, std::string value_name,
                  std::string help) {
    return add({std::move(name), FieldType::kReal, {}, {}, {}, member, range},
               std::move(value_name), std::move(help), of(member));
  }
  // A choice among an enum's values, each named as to_string names it (reports write the same
  // name back).
  template <class E>
  PlanField& named(std::string name, std::initializer_list<E> values, E Plan::*member,
                   std::string value_name, std::string help) {
    std::vector<std::string_view> names;
    for (const E v : values) names.push_back(to_string(v));
    return choice(
        std::move(name), std::move(names),
        [values = std::vector<E>(values), member](Plan& p, const std::string& s) {
          for (const E v : values) {
            if (s == to_string(v)) p.*member = v;
          }
        },
        [member](const Plan& p) { return nlohmann::ordered_json(to_string(p.*member)); },
        std::move(value_name), std::move(help));
  }
  PlanField& choice(std::string name, std::vector<std::string_view> options, Set set, Report report,
                    std::string value_name, std::string help) {
    return add({std::move(name),
                FieldType::kChoice,
                {},
                std::move(options),
                [set = std::move(set)](Plan& p, std::int64_t, const std::string& s) { set(p, s); }},
               std::move(value_name), std::move(help), std::move(report));
  }
  PlanField& text(std::string name, FieldType type, Set set, Check check, Report report,
                  std::string value_name, std::string help) {
    PlanField f{std::move(name),
                type,
                {},
                {},
                [set = std::move(set)](Plan& p, std::int64_t, const std::string& s) { set(p, s); }};
    f.check = std::move(check);
    return add(std::move(f), std::move(value_name), std::move(help), std::move(report));
  }
  PlanField& add(PlanField field, std::string value_name, std::string help, Report report) {
    field.value_name = std::move(value_name);
    field.help = std::move(help);
    field.report = std::move(report);
    fields.push_back(std::move(field));
    return fields.back();
  }

  /// The member as it is.
  template <class T>
  static Report of(T Plan::*member) {
    return [member](const Plan& p) { return nlohmann::ordered_json(p.*member); };
  }
  /// `report`'s value only where `when` holds (else null: left out).
  static Report only_if(std::function<bool(const Plan&)> when, Report report) {
    return [when = std::move(when), report = std::move(report)](const Plan& p) {
      return when(p) ? report(p) : nlohmann::ordered_json();
    };
  }
  /// `words` where the switch is `on` (a text report's options line), else nothing.
  static Describe says(bool Plan::*member, std::string words, bool on = true) {
    return [member, words = std::move(words), on](const Plan& p) {
      return p.*member == on ? words : std::string();
    };
  }
  /// "`word` N" with the member's value N, nothing where it is `hidden` (a label's "tp 4").
  static Describe shows(std::string word, std::int64_t Plan::*member,
                        std::int64_t hidden = std::numeric_limits<std::int64_t>::min()) {
    return [word = std::move(word), member, hidden](const Plan& p) {
      return p.*member == hidden ? std::string() : word + " " + std::to_string(p.*member);
    };
  }
  /// `report`'s value only where it is not a default plan's.
  static Report unless_default(Report report) {
    return [report = std::move(report)](const Plan& p) {
      auto v = report(p);
      return v == report(Plan{}) ? nlohmann::ordered_json() : v;
    };
  }

  std::vector<PlanField> fields;
};

// The table's sections, in the order --help lists them.
void parallel_fields(FieldTable& t);
void batch_and_schedule_fields(FieldTable& t);
void memory_and_overlap_fields(FieldTable& t);

}  // namespace trainsim
