// The plan's schema reads a number the same way from a flag and from a scenario: the same values
// pass, the same are refused with the same words, and every default (which a report's plan
// writes) passes, so a report's plan can be given back as a scenario.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cli/plan_fields.hpp"
#include "sim/core/error.hpp"

namespace trainsim {
namespace {

// The error a flag's value gets, "" when it is taken.
std::string flag_error(const PlanField& field, const std::string& value) {
  Plan p;
  try {
    apply_flag(p, field, value);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The error a scenario's value gets, "" when it is taken.
std::string json_error(const PlanField& field, double value) {
  Plan p;
  const nlohmann::json plan = {{field.name, value}};
  JsonObject o(plan, "s.json", "$.plan");
  try {
    apply_json(p, field, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// What follows "must be" in an error, so that the flag's and the file's can be compared.
std::string rule_of(const std::string& error) {
  const auto at = error.find("must be");
  return at == std::string::npos ? error : error.substr(at);
}

TEST(PlanFields, RealsReadTheSameFromAFlagAndAScenario) {
  std::int64_t reals = 0;
  for (const auto& field : plan_fields()) {
    if (field.type != FieldType::kReal) continue;
    ++reals;
    const double def = Plan{}.*field.real;
    const auto& r = field.real_range;
    std::vector<double> values = {def, r.min, r.min + 0.5, r.min - 0.5, -1.0, 0.0, 1.0};
    if (r.max < 1e300) values.push_back(r.max);
    for (const double v : values) {
      const std::string text = nlohmann::json(v).dump();
      const std::string from_flag = flag_error(field, text);
      const std::string from_file = json_error(field, v);
      EXPECT_EQ(from_flag.empty(), from_file.empty())
          << field.name << " = " << text << ": flag '" << from_flag << "', file '" << from_file
          << "'";
      if (!from_flag.empty() && !from_file.empty()) {
        EXPECT_EQ(rule_of(from_flag), rule_of(from_file)) << field.name << " = " << text;
      }
    }
    EXPECT_EQ(flag_error(field, nlohmann::json(def).dump()), "") << field.name << " default";
  }
  // moe_imbalance, moe_capacity_factor, attention_dropout, hidden_dropout.
  EXPECT_EQ(reals, 4);
}

// The bounds as Megatron-LM states them: a probability below 1; an imbalance of at least 1 (the
// balanced default); a capacity factor of 0 (dropless, the default) or above.
TEST(PlanFields, RealBounds) {
  auto field = [](const std::string& name) -> const PlanField& {
    for (const auto& f : plan_fields()) {
      if (f.name == name) return f;
    }
    throw std::runtime_error("no field " + name);
  };
  EXPECT_EQ(flag_error(field("attention_dropout"), "1"),
            "--attention-dropout: must be a number >= 0 and < 1, got 1");
  EXPECT_EQ(flag_error(field("attention_dropout"), "0.1"), "");
  EXPECT_EQ(json_error(field("attention_dropout"), -0.1),
            "s.json: $.plan.attention_dropout: must be a number >= 0 and < 1, got -0.1");
  EXPECT_EQ(flag_error(field("moe_imbalance"), "0.9"),
            "--moe-imbalance: must be a number >= 1, got 0.9");
  EXPECT_EQ(json_error(field("moe_imbalance"), 1.0), "");
  EXPECT_EQ(json_error(field("moe_capacity_factor"), 0.0), "");
  EXPECT_EQ(flag_error(field("moe_capacity_factor"), "-1"),
            "--moe-capacity-factor: must be a number >= 0, got -1");
}

}  // namespace
}  // namespace trainsim
