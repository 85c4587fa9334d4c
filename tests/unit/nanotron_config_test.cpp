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
        config_with("num_key_value_heads: 4", "num_key_value_heads: 3"), "t", "n.yaml");
    ADD_FAILURE() << "3 KV heads of 4 read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("n.yaml: $.model.model_config.num_key_value_heads", 0),
              0u);
  }
}

// nanotron's MoEConfig under the tiny model (hidden 16, 2 layers, dense MLP 64): 8 experts of 32,
// top 2, a gated shared expert of 48. Each MoE layer trades the dense MLP's 3 x 16 x 64 weights
// for the router's 8 x 16, the experts' 8 x 3 x 16 x 32, the shared expert's 3 x 16 x 48 and its
// gate's 16.
const std::string kExperts =
    "vocab_size: 50277\n    moe_config:\n      num_experts: 8\n      top_k: 2\n"
    "      moe_intermediate_size: 32\n      enable_shared_expert: true\n"
    "      shared_expert_intermediate_size: 48\n";

Model moe_model(const std::string& layers = "") {
  return model_from_nanotron_config(
      config_with("vocab_size: 50277\n",
                  kExperts + (layers.empty() ? "" : "      layers: " + layers + "\n")),
      "t", "n.yaml");
}

TEST(NanotronConfig, MoeConfigIsQwen2MoeLayer) {
  const Model dense = model_from_nanotron_config(config_with("", ""), "t", "n.yaml");
  const Model m = moe_model();
  EXPECT_EQ(m.moe.num_experts, 8);
  EXPECT_EQ(m.moe.experts_per_token, 2);
  EXPECT_TRUE(m.moe.shared_expert_gate);
  EXPECT_EQ(moe_layer_count(m), 2);
  const std::int64_t per_layer = 8 * 16 + 8 * 3 * 16 * 32 + 3 * 16 * 48 + 16 - 3 * 16 * 64;
  EXPECT_EQ(total_params(m) - total_params(dense), 2 * per_layer);
  EXPECT_EQ(moe_layer_count(moe_model("[-1]")), 2);
  const Model second = moe_model("[1]");
  EXPECT_EQ(moe_layer_count(second), 1);
  EXPECT_EQ(total_params(second) - total_params(dense), per_layer);
  const Model first = moe_model("[0]");  // an MoE layer first, then a dense one
  EXPECT_EQ(first.moe.layers, (std::vector<std::int64_t>{0}));
  EXPECT_TRUE(is_moe_layer(first, 0));
  EXPECT_FALSE(is_moe_layer(first, 1));
  EXPECT_EQ(total_params(first), total_params(second));
  try {
    (void)moe_model("[]");
    ADD_FAILURE() << "layers [] read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "n.yaml: $.model.model_config.moe_config.layers: lists no layer: give [-1] for "
              "every layer");
  }
  try {
    (void)moe_model("[2]");
    ADD_FAILURE() << "layers [2] read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "n.yaml: $.model.model_config.moe_config.layers: must be [-1] (every layer) or a "
              "list of layer indices below 2");
  }
}

// nanotron loads its config strictly (dacite's strict=True): a key MoEConfig lacks stops it, and
// so it stops trainsim; its own keys trainsim does not price (the auxiliary loss's coefficient)
// pass, and the dispatcher must be one nanotron knows.
TEST(NanotronConfig, MoeConfigKeysAreMoeConfigsOwn) {
  const auto error = [](const std::string& extra) {
    try {
      (void)model_from_nanotron_config(config_with("vocab_size: 50277\n", kExperts + extra), "t",
                                       "n.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  EXPECT_EQ(error("      router_aux_loss_coef: 0.001\n      token_dispatcher_type: allgather\n"),
            "(read)");
  EXPECT_EQ(error("      num_shared_experts: 2\n"),
            "n.yaml: $.model.model_config.moe_config.num_shared_experts: unknown key (known keys "
            "here: enable_shared_expert, layers, moe_intermediate_size, num_experts, "
            "router_aux_loss_coef, shared_expert_intermediate_size, token_dispatcher_type, top_k)");
  EXPECT_EQ(
      error("      token_dispatcher_type: deepep\n")
          .rfind("n.yaml: $.model.model_config.moe_config.token_dispatcher_type: must be one of",
                 0),
      0u);
}

// The plan of an MoE config: experts whole on each TP rank (etp 1), which needs REDUCE_SCATTER
// (ALL_REDUCE hands every TP rank all the tokens); nanotron cannot start with ep above 1.
TEST(NanotronConfig, MoePlanAsNanotronRunsIt) {
  const auto plan = [](const std::string& mode, const std::string& extra = "") {
    std::string text = test::read_file(kConfig);
    text.replace(text.find("vocab_size: 50277\n"), 18, kExperts);
    text.replace(text.find("tp_mode: ALL_REDUCE"), 19, "tp_mode: " + mode + extra);
    return plan_from_nanotron_config(parse_yaml_subset(text, "n.yaml"), "n.yaml");
  };
  const NanotronPlan p = plan("REDUCE_SCATTER");
  EXPECT_EQ(p.fields.at("etp"), "1");
  EXPECT_EQ(p.fields.at("sp"), "true");
  EXPECT_TRUE(p.notes.empty());
  const NanotronPlan again = plan("REDUCE_SCATTER", "\n  recompute_layer: true");
  ASSERT_EQ(again.notes.size(), 1u);
  EXPECT_TRUE(again.notes[0].starts_with("n.yaml: $.parallelism.recompute_layer: the MoE layers"));
  try {
    (void)plan("ALL_REDUCE");
    ADD_FAILURE() << "ALL_REDUCE read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("n.yaml: $.parallelism.tp_mode: ALL_REDUCE with tp "
                                          "above 1",
                                          0),
              0u);
  }
  EXPECT_EQ(plan_error("expert_parallel_size: 1", "expert_parallel_size: 2"),
            "n.yaml: $.parallelism.expert_parallel_size: above 1 cannot start in nanotron (its "
            "ParallelContext lays the world's ranks out as ep x pp x dp x cp x tp after asserting "
            "tp x cp x dp x pp is the world size): use 1");
}

}  // namespace
}  // namespace trainsim
