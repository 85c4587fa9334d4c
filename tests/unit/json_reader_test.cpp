#include "sim/core/json_reader.hpp"

#include <gtest/gtest.h>

#include "sim/core/error.hpp"

namespace trainsim {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JsonReader, ReadsTypedValuesAndRejectsUnknownKeys) {
  auto j = parse_json_text(R"({"a": 3, "b": 0.5, "c": "x", "d": true, "e": {"f": 2}})", "t.json");
  JsonObject o(j, "t.json");
  EXPECT_EQ(o.integer("a"), 3);
  EXPECT_DOUBLE_EQ(o.number("b"), 0.5);
  EXPECT_EQ(o.string("c"), "x");
  EXPECT_TRUE(o.boolean("d"));
  auto e = o.object("e");
  EXPECT_EQ(e.integer("f"), 2);
  e.finish();
  o.finish();

  JsonObject o2(j, "t.json");
  o2.integer("a");
  EXPECT_EQ(error_of([&] { o2.finish(); }), "t.json: $.b: unknown key (known keys here: a)");
}

TEST(JsonReader, ErrorsNameFileAndPath) {
  auto j = parse_json_text(R"({"plan": {"tp": -4, "pp": 2.5, "name": ""}})", "s.json");
  JsonObject o(j, "s.json");
  auto plan = o.object("plan");
  EXPECT_EQ(error_of([&] { plan.integer("tp"); }),
            "s.json: $.plan.tp: must be an integer >= 1, got -4");
  EXPECT_EQ(error_of([&] { plan.integer("pp"); }),
            "s.json: $.plan.pp: must be an integer >= 1, got a number 2.5");
  EXPECT_EQ(error_of([&] { plan.string("name"); }), "s.json: $.plan.name: must not be empty");
  EXPECT_EQ(error_of([&] { plan.integer("dp"); }), "s.json: $.plan.dp: required key is missing");
  EXPECT_EQ(error_of([&] {
              plan.choice("tp", {"a", "b"});
            }),
            "s.json: $.plan.tp: must be a string, got an integer");
}

TEST(JsonReader, MalformedJsonGivesLineAndColumn) {
  auto msg = error_of([] { parse_json_text("{\n  \"a\": 1,\n  \"b\" 2\n}", "bad.json"); });
  EXPECT_NE(msg.find("bad.json: malformed JSON at line 3, column"), std::string::npos) << msg;
}

TEST(JsonReader, RangesOnNumbers) {
  auto j = parse_json_text(R"({"f": 1.5, "z": 0})", "r.json");
  JsonObject o(j, "r.json");
  EXPECT_EQ(error_of([&] {
              o.number("f", {0.0, false, 1.0, true});
            }),
            "r.json: $.f: must be a number > 0 and <= 1, got 1.5");
  EXPECT_EQ(error_of([&] { o.number("z"); }), "r.json: $.z: must be a number > 0, got 0");
  EXPECT_DOUBLE_EQ(o.number("z", {0.0, true}), 0.0);
}

}  // namespace
}  // namespace trainsim
