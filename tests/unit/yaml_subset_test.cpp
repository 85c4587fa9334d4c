// The YAML subset of trainers' config files: PyYAML's block style (sequences at their key's
// indentation, "- key: value" items), scalars typed as PyYAML types them, flow lists and maps on
// one line, and what lies beyond refused naming the line.
#include "sim/core/yaml_subset.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sim/core/error.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

std::string error_of(const std::string& text) {
  try {
    (void)parse_yaml_subset(text, "c.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(read)";
}

TEST(YamlSubset, BlockMappingsAndSequencesAsPyYamlWritesThem) {
  const auto j = parse_yaml_subset(
      "# a comment\n"
      "data_stages:\n"
      "- data:\n"
      "    dataset: null\n"
      "    seed: 42\n"
      "  name: Stable Training Stage   # trailing\n"
      "- name: 'second # not a comment'\n"
      "model:\n"
      "  dtype: bfloat16\n"
      "  rms_norm_eps: 1.0e-05\n"
      "  tie: true\n"
      "  moe_config: null\n"
      "  moe_config:\n"
      "    top_k: 2\n"
      "  weights: [0.5, 0.5]\n"
      "  empty: {}\n"
      "  flow: {a: 1, b: \"x y\"}\n"
      "list:\n"
      "  - 1f1b\n"
      "  -\n"
      "    nested: ~\n",
      "c.yaml");
  EXPECT_EQ(j["data_stages"].size(), 2u);
  EXPECT_TRUE(j["data_stages"][0]["data"]["dataset"].is_null());
  EXPECT_EQ(j["data_stages"][0]["data"]["seed"], 42);
  EXPECT_EQ(j["data_stages"][0]["name"], "Stable Training Stage");
  EXPECT_EQ(j["data_stages"][1]["name"], "second # not a comment");
  EXPECT_EQ(j["model"]["dtype"], "bfloat16");
  EXPECT_DOUBLE_EQ(j["model"]["rms_norm_eps"].get<double>(), 1e-5);
  EXPECT_EQ(j["model"]["tie"], true);
  EXPECT_EQ(j["model"]["moe_config"]["top_k"], 2);  // the later key replaces the earlier
  EXPECT_EQ(j["model"]["weights"], (nlohmann::json{0.5, 0.5}));
  EXPECT_TRUE(j["model"]["empty"].is_object() && j["model"]["empty"].empty());
  EXPECT_EQ(j["model"]["flow"], (nlohmann::json{{"a", 1}, {"b", "x y"}}));
  EXPECT_EQ(j["list"][0], "1f1b");
  EXPECT_TRUE(j["list"][1]["nested"].is_null());
}

TEST(YamlSubset, NanotronsExampleConfigReads) {
  const auto j = parse_yaml_subset(
      test::read_file(test::source_dir() + "/scenarios/launch/nanotron-108.yaml"), "n.yaml");
  EXPECT_EQ(j["parallelism"]["tp_mode"], "ALL_REDUCE");
  EXPECT_EQ(j["model"]["model_config"]["vocab_size"], 50277);
  EXPECT_EQ(j["tokens"]["val_check_interval"], -1);
  EXPECT_EQ(j["general"]["run"], "tiny_llama_%date_%jobid");
}

TEST(YamlSubset, WhatLiesBeyondIsRefusedNamingTheLine) {
  EXPECT_EQ(error_of("a:\n\tb: 1\n"), "c.yaml: line 2: indents with a tab");
  EXPECT_EQ(error_of("a: &x 1\n").rfind("c.yaml: line 1: uses an anchor, alias or tag", 0), 0u);
  EXPECT_EQ(error_of("a: |\n  text\n"), "c.yaml: line 1: starts a block scalar, which is not read");
  EXPECT_EQ(error_of("a: 'open\n"), "c.yaml: line 1: has an unclosed quote");
  EXPECT_EQ(error_of("a: one\n  two\n"),
            "c.yaml: line 2: is indented more than its mapping's keys");
  EXPECT_EQ(error_of("a:\n  b: 1\n c: 2\n"),
            "c.yaml: line 3: is indented more than its mapping's keys");
  EXPECT_EQ(error_of("  a: 1\nb: 2\n"),
            "c.yaml: line 2: is indented less than the line it follows");
  EXPECT_EQ(error_of("a: [1, [2]]\n"), "c.yaml: line 1: nests flow collections");
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
  EXPECT_EQ(error_of(deep).rfind("c.yaml: line ", 0), 0u);
  EXPECT_NE(error_of(deep).find("nests deeper than 64"), std::string::npos);
}

}  // namespace
}  // namespace trainsim
