// A model written as trainsim's model JSON reads back as the same model: every catalog model and
// every Hugging Face config of the test data (sliding windows, sinks, MLA, shared experts, ...).
#include <gtest/gtest.h>

#include <filesystem>

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

}  // namespace
}  // namespace trainsim
