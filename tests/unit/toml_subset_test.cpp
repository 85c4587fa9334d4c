// The TOML subset of training configs: tables and dotted tables, bare, quoted and dotted keys,
// strings, integers, floats, booleans and arrays over several lines, typed as TOML types them,
// and what lies beyond refused naming the line.
#include "sim/core/toml_subset.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sim/core/error.hpp"

namespace trainsim {
namespace {

std::string error_of(const std::string& text) {
  try {
    (void)parse_toml_subset(text, "c.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(read)";
}

TEST(TomlSubset, TablesKeysAndValuesAsTomlTypesThem) {
  const auto j = parse_toml_subset(
      "# torchtitan Config.toml\n"
      "top = 1\n"
      "\n"
      "[model]\n"
      "name = \"llama3\"   # trailing\n"
      "flavor = '8B'\n"
      "converters = [\"float8\", 'mx',]\n"
      "\"quoted key\" = \"a \\\"b\\\" \\\\ # not a comment\"\n"
      "[training]\n"
      "seq_len = 8_192\n"
      "lr = 3e-4\n"
      "eps = -1.5\n"
      "steps = +10\n"
      "compile = false\n"
      "deterministic = true\n"
      "ratio = 1.0\n"
      "[ quantize.linear . float8 ]\n"
      "filter_fqns = [\n"
      "  \"output\",  # a comment inside\n"
      "  \"router\"\n"
      "]\n"
      "nested = [[1, 2], []]\n"
      "[quantize]\n"
      "dotted.key = 3\n",
      "c.toml");
  EXPECT_EQ(j["top"], 1);
  EXPECT_EQ(j["model"]["name"], "llama3");
  EXPECT_EQ(j["model"]["flavor"], "8B");
  EXPECT_EQ(j["model"]["converters"], nlohmann::json::parse(R"(["float8", "mx"])"));
  EXPECT_EQ(j["model"]["quoted key"], "a \"b\" \\ # not a comment");
  EXPECT_EQ(j["training"]["seq_len"], 8192);
  EXPECT_TRUE(j["training"]["seq_len"].is_number_integer());
  EXPECT_DOUBLE_EQ(j["training"]["lr"].get<double>(), 3e-4);
  EXPECT_DOUBLE_EQ(j["training"]["eps"].get<double>(), -1.5);
  EXPECT_EQ(j["training"]["steps"], 10);
  EXPECT_EQ(j["training"]["compile"], false);
  EXPECT_EQ(j["training"]["deterministic"], true);
  EXPECT_TRUE(j["training"]["ratio"].is_number_float());
  EXPECT_EQ(j["quantize"]["linear"]["float8"]["filter_fqns"],
            nlohmann::json::parse(R"(["output", "router"])"));
  EXPECT_EQ(j["quantize"]["linear"]["float8"]["nested"], nlohmann::json::parse("[[1, 2], []]"));
  EXPECT_EQ(j["quantize"]["dotted"]["key"], 3);
  EXPECT_EQ(parse_toml_subset("", "c.toml"), nlohmann::json::object());
  EXPECT_EQ(parse_toml_subset("a = 1\r\n[b]\r\nc = 'x'\r\n", "c.toml")["b"]["c"], "x");
}

TEST(TomlSubset, WhatItDoesNotHoldIsAnErrorNamingTheLine) {
  EXPECT_EQ(error_of("a = 1\n[[runs]]\n"),
            "c.toml: line 2: opens an array of tables ([[...]]), which is not read");
  EXPECT_EQ(error_of("a = {b = 1}\n"),
            "c.toml: line 1: holds an inline table ({...}), which is not read");
  EXPECT_EQ(error_of("a = \"\"\"x\"\"\"\n"),
            "c.toml: line 1: holds a multi-line string, which is not read");
  EXPECT_EQ(error_of("[t]\na = 1\na = 2\n"), "c.toml: line 3: gives key 'a' a second time");
  EXPECT_EQ(error_of("[t]\n[u]\n[t]\n"), "c.toml: line 3: opens table [t] a second time");
  EXPECT_EQ(error_of("a = 1\n[a]\n"), "c.toml: line 2: uses 'a', which holds a value, as a table");
  const std::string not_value =
      "', which is not a string, boolean, decimal number or array (dates, inf, nan and other "
      "bases are not read)";
  EXPECT_EQ(error_of("d = 1979-05-27\n"), "c.toml: line 1: has '1979-05-27" + not_value);
  EXPECT_EQ(error_of("x = inf\n"), "c.toml: line 1: has 'inf" + not_value);
  EXPECT_EQ(error_of("x = 0x1F\n"), "c.toml: line 1: has '0x1F" + not_value);
  EXPECT_EQ(error_of("x = yes\n"), "c.toml: line 1: has 'yes" + not_value);
  EXPECT_EQ(error_of("x = 1__0\n"), "c.toml: line 1: has '1__0', whose '_' is not between digits");
  EXPECT_EQ(error_of("x = \"open\n"), "c.toml: line 1: has an unclosed string");
  EXPECT_EQ(error_of("x = [1,\n 2\n"), "c.toml: line 3: has an array not closed by ']'");
  EXPECT_EQ(error_of("x = [1 2]\n"), "c.toml: line 1: has array items not separated by ','");
  EXPECT_EQ(error_of("x = 1 y = 2\n"), "c.toml: line 1: has 'y = 2' after its value or header");
  EXPECT_EQ(error_of("x =\n"), "c.toml: line 1: has no value after '='");
  EXPECT_EQ(error_of("just words\n"),
            "c.toml: line 1: is neither 'key = value' nor a [table] header");
  EXPECT_EQ(error_of("[t\n"), "c.toml: line 1: has a table header not closed by ']'");
  EXPECT_EQ(error_of("x = \"\\u00e9\"\n"),
            "c.toml: line 1: has the escape '\\u', which is not read");
  EXPECT_EQ(error_of("x = " + std::string(70, '[') + std::string(70, ']') + "\n"),
            "c.toml: line 1: nests arrays deeper than 64");
}

}  // namespace
}  // namespace trainsim
