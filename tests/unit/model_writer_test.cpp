// A model written as trainsim's model JSON reads back as the same model: every catalog model and
// every Hugging Face config of the test data (sliding windows, sinks, MLA, shared experts, ...).
#include <gtest/gtest.h>

#include <filesystem>

#include "sim/core/error.hpp"
#include "sim/model/model_writer.hpp"
#include "sim/model/params.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

void expect_round_trip(const Model& m, const std::string& label) {
  SCOPED_TRACE(label);
  const nlohmann::ordered_json written = model_json(m);
  const Model back = parse_model_json(nlohmann::json::parse(written.dump()), label);
  EXPECT_EQ(model_json(back), written);
  EXPECT_EQ(total_params(back), total_params(m));
  EXPECT_EQ(active_params(back), active_params(m));
  EXPECT_EQ(moe_layer_count(back), moe_layer_count(m));
  EXPECT_EQ(back.head_dim, m.head_dim);
  EXPECT_EQ(back.local_attention.size, m.local_attention.size);
  EXPECT_EQ(back.published.total, m.published.total);
}

TEST(ModelWriter, EveryCatalogModelReadsBackAsItself) {
  int models = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source_dir() + "/models")) {
    if (entry.path().extension() != ".json") continue;
    expect_round_trip(load_model(entry.path()), entry.path().filename().string());
    ++models;
  }
  EXPECT_GE(models, 20);
}

TEST(ModelWriter, EveryHuggingFaceConfigOfTheTestDataReadsBackAsItself) {
  int configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::data_path("hf"))) {
    expect_round_trip(load_model(entry.path() / "config.json"), entry.path().filename().string());
    ++configs;
  }
  EXPECT_GE(configs, 25);
}

TEST(ModelWriter, OptionalKeysAppearOnlyAwayFromTheirDefaults) {
  const nlohmann::ordered_json llama = model_json(test::catalog_model("llama3.1-8b"));
  EXPECT_FALSE(llama.contains("head_dim"));
  EXPECT_FALSE(llama.contains("moe"));
  EXPECT_FALSE(llama.contains("qk_norm"));
  EXPECT_EQ(llama["ffn_kind"], "swiglu");
  EXPECT_EQ(llama["num_kv_heads"], 8);
  const nlohmann::ordered_json deepseek = model_json(test::catalog_model("deepseek-v3"));
  EXPECT_EQ(deepseek["moe"]["first_dense_layers"], 3);
  EXPECT_EQ(deepseek["mla"]["q_lora_rank"], 1536);
  EXPECT_FALSE(deepseek.contains("head_dim"));  // MLA's widths give it
}

// MoE layers no rule of leading dense layers and equal groups holds (the first of each pair, as
// Megatron's --moe-layer-freq 2 routes) are written as their list and read back so.
TEST(ModelWriter, MoeLayersOutsideTheRuleAreWrittenAsTheirList) {
  Model m = test::catalog_model("mixtral-8x7b");
  std::vector<bool> first_of_pairs;
  for (std::int64_t i = 0; i < m.num_layers; ++i) first_of_pairs.push_back(i % 2 == 0);
  ASSERT_TRUE(set_moe_layers(m, first_of_pairs));
  const nlohmann::ordered_json written = model_json(m);
  EXPECT_EQ(written["moe"]["layers"].size(), 16U);
  EXPECT_EQ(written["moe"]["layers"][1], 2);
  EXPECT_FALSE(written["moe"].contains("layer_interval"));
  expect_round_trip(m, "mixtral-8x7b, MoE on even layers");
  EXPECT_EQ(moe_layer_count(m), 16);
  // The last of each pair is the rule's: no list.
  std::vector<bool> last_of_pairs;
  for (std::int64_t i = 0; i < m.num_layers; ++i) last_of_pairs.push_back(i % 2 == 1);
  ASSERT_TRUE(set_moe_layers(m, last_of_pairs));
  EXPECT_TRUE(m.moe.layers.empty());
  EXPECT_EQ(model_json(m)["moe"]["layer_interval"], 2);
  // A list beside the rule's keys is refused.
  nlohmann::json both = nlohmann::json::parse(written.dump());
  both["moe"]["layer_interval"] = 2;
  try {
    (void)parse_model_json(both, "m.json");
    ADD_FAILURE() << "a list beside layer_interval read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "m.json: $.moe.layers: replaces first_dense_layers and layer_interval: give one or "
              "the other");
  }
}

}  // namespace
}  // namespace trainsim
