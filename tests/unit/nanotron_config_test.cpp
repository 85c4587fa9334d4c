// A nanotron config as the plan and model trainsim prices: each section's keys to plan fields
// (the global batch from the accumulation, the engine and TP mode to trainsim's names), the
// model_config to a model with the parameters of the same model written by hand, and what cannot
// be priced refused naming the key.
#include "sim/plan/nanotron_config.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sim/core/error.hpp"
#include "sim/core/yaml_subset.hpp"
#include "sim/model/params.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::string kConfig = test::source_dir() + "/scenarios/launch/nanotron-108.yaml";

nlohmann::json config_with(const std::string& from, const std::string& to) {
  std::string text = test::read_file(kConfig);
  if (!from.empty()) text.replace(text.find(from), from.size(), to);
  return parse_yaml_subset(text, "n.yaml");
}

std::string plan_error(const std::string& from, const std::string& to) {
  try {
    (void)plan_from_nanotron_config(config_with(from, to), "n.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(read)";
}

TEST(NanotronConfig, SectionsSetThePlanFields) {
  const NanotronPlan p = plan_from_nanotron_config(config_with("", ""), "n.yaml");
  const std::map<std::string, std::string> expected = {
      {"dp", "2"},           {"tp", "2"},
      {"pp", "2"},           {"schedule", "1f1b"},
      {"sp", "false"},       {"seq_len", "256"},
      {"mbs", "1"},          {"gbs", "8"},  // 1 x 4 accumulation x dp 2
      {"precision", "bf16"}, {"vocab_divisible_by", "1"},
      {"zero", "0"},         {"partition", "nanotron"}};
  EXPECT_EQ(p.fields, expected);
  EXPECT_EQ(p.origin.at("gbs"), "n.yaml: $.tokens.batch_accumulation_per_replica");
  EXPECT_EQ(p.origin.at("sp"), "n.yaml: $.parallelism.tp_mode");
  const NanotronPlan other =
      plan_from_nanotron_config(config_with("tp_mode: ALL_REDUCE",
                                            "tp_mode: REDUCE_SCATTER\n  recompute_layer: true\n"
                                            "  context_parallel_size: 2\n  pp_engine: afab"),
                                "n.yaml");
  EXPECT_EQ(other.fields.at("sp"), "true");
  EXPECT_EQ(other.fields.at("recompute"), "full");
  EXPECT_EQ(other.fields.at("cp"), "2");
}

TEST(NanotronConfig, ModelConfigIsTheModelWrittenByHand) {
  const Model m = model_from_nanotron_config(config_with("", ""), "tiny", "n.yaml");
  const Model by_hand = test::seed_model("nanotron-108-tiny");
  EXPECT_EQ(m.num_layers, 2);
  EXPECT_EQ(m.ffn_kind, FfnKind::kSwiGLU);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_EQ(total_params(m), total_params(by_hand));
  EXPECT_EQ(
      model_from_nanotron_config(config_with("hidden_act: silu", "hidden_act: gelu"), "t", "n.yaml")
          .ffn_kind,
      FfnKind::kGeGLU);
  // num_key_value_heads null: as many as the heads.
  EXPECT_EQ(model_from_nanotron_config(
                config_with("num_key_value_heads: 4", "num_key_value_heads: null"), "t", "n.yaml")
                .num_kv_heads,
            4);
}

TEST(NanotronConfig, WhatCannotBePricedNamesTheKey) {
  EXPECT_EQ(plan_error("dtype: bfloat16", "dtype: float32"),
            "n.yaml: $.model.dtype: is float32: trainsim prices BF16 training (and FP8 by "
            "--precision)");
  EXPECT_EQ(
      plan_error("pp_engine: 1f1b", "pp_engine: zb").rfind("n.yaml: $.parallelism.pp_engine", 0),
      0u);
  EXPECT_EQ(plan_error("zero_stage: 0", "zero_stage: 3").rfind("n.yaml: $.optimizer.zero_stage", 0),
            0u);
  EXPECT_EQ(plan_error("  tp: 2\n", "").rfind("n.yaml: $.parallelism.tp", 0), 0u);
  // The global batch is their product: each factor is bounded so that it fits in 64 bits.
  EXPECT_EQ(plan_error("micro_batch_size: 1", "micro_batch_size: 5238910978249312024")
                .rfind("n.yaml: $.tokens.micro_batch_size: must be an integer in [1, 1048576]", 0),
            0u);
  try {
    (void)model_from_nanotron_config(
        config_with("vocab_size: 50277",
                    "vocab_size: 50277\n    moe_config:\n      num_experts: 8"),
        "t", "n.yaml");
    ADD_FAILURE() << "moe_config read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("n.yaml: $.model.model_config.moe_config: nanotron's "
                                          "mixture of experts is not read",
                                          0),
              0u);
  }
  try {
    (void)model_from_nanotron_config(
        config_with("num_key_value_heads: 4", "num_key_value_heads: 3"), "t", "n.yaml");
    ADD_FAILURE() << "3 KV heads of 4 read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("n.yaml: $.model.model_config.num_key_value_heads", 0),
              0u);
  }
}

}  // namespace
}  // namespace trainsim
