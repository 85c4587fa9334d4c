// trainsim validate on Megatron-LM's SC21 table (DGX A100): the measured step time is the paper's
// Eq. 3 FLOPs over the published TFLOP/s, the prediction is the simulated step of the row's plan
// completed by NVIDIA's launch script, and the rows the table does not describe fully say why.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/evaluate/evaluate.hpp"
#include "sim/validate/validate.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

nlohmann::json table_row(std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                         std::int64_t tp, std::int64_t pp, std::int64_t gpus, std::int64_t gbs,
                         double tflops) {
  return {{"params_billion", 1.7},
          {"attention_heads", heads},
          {"hidden_size", hidden},
          {"num_layers", layers},
          {"tp", tp},
          {"pp", pp},
          {"n_gpus", gpus},
          {"global_batch_size", gbs},
          {"tflops_per_gpu", tflops},
          {"seq_len", 2048},
          {"vocab_size", 51200}};
}

nlohmann::json script_row(std::int64_t layers, std::int64_t hidden, std::int64_t mbs,
                          nlohmann::json per_chunk, const std::string& ddp) {
  return {{"num_layers", layers},
          {"hidden_size", hidden},
          {"micro_batch_size", mbs},
          {"num_layers_per_virtual_pipeline_stage", per_chunk},
          {"ddp_impl", ddp}};
}

// Writes the table (and the launch-script rows, unless null) into a fresh folder and validates.
ValidationSet validate_tables(const nlohmann::json& table1, const nlohmann::json& table2,
                              const nlohmann::json& script) {
  const auto dir = test::make_temp_dir();
  const auto path = dir + "/narayanan2021_megatron_a100_table1_table2.json";
  test::write_file(
      path, nlohmann::json{{"rows_table1", table1}, {"rows_table2_ptdp_vs_zero3", table2}}.dump());
  if (!script.is_null()) {
    test::write_file(dir + "/narayanan2021_sc21_run_args.json",
                     nlohmann::json{{"rows_table1", script}}.dump());
  }
  return validate_reference(path, test::catalog_platform("a100-sxm-hdr")).at(0);
}

Model gpt(std::int64_t layers, std::int64_t hidden, std::int64_t heads) {
  Model m;
  m.name = "gpt";
  m.num_layers = layers;
  m.hidden_size = hidden;
  m.num_attention_heads = m.num_kv_heads = heads;
  m.head_dim = hidden / heads;
  m.ffn_hidden_size = 4 * hidden;
  m.ffn_kind = FfnKind::kGelu;
  m.vocab_size = 51200;
  m.tied_embeddings = true;
  m.position_embedding = PositionEmbedding::kLearned;
  m.max_position_embeddings = 2048;
  m.norm = NormKind::kLayerNorm;
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = true;
  return m;
}

// The plan a launch-script row gives the 24-layer, 2304-wide GPT of these tests, and its step.
Plan sc21_recipe(std::int64_t pp, std::int64_t dp, std::int64_t mbs, std::int64_t gbs) {
  Plan p;
  p.pp = pp;
  p.dp = dp;
  p.mbs = mbs;
  p.gbs = gbs;
  p.seq_len = 2048;
  p.recompute = Recompute::kFull;
  p.attention_backend = AttentionBackend::kUnfused;
  p.attention_dropout = 0.1;  // CONFIG.sh sets none: Megatron-LM's defaults
  p.hidden_dropout = 0.1;
  return p;
}

double simulated_step(const Plan& p) {
  const Model m = gpt(24, 2304, 24);
  const Platform pf = test::catalog_platform("a100-sxm-hdr");
  return evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s;
}

TEST(ValidateSc21, MeasuredIsEq3OverTheRateAndPredictedTheScriptsPlan) {
  const auto set = validate_tables(
      nlohmann::json::array(
          {table_row(24, 2304, 24, 1, 1, 32, 512, 137), table_row(24, 2304, 24, 1, 2, 4, 64, 100)}),
      nlohmann::json::array(), nlohmann::json::array({script_row(24, 2304, 16, nullptr, "torch")}));
  ASSERT_EQ(set.rows.size(), 2u);
  const auto& row = set.rows[0];
  ASSERT_FALSE(row.skipped) << *row.skipped;
  EXPECT_EQ(row.name, "GPT 1.7B 32 GPUs (SC21 Table 1)");
  // 96 B s l h^2 (1 + s/6h + V/16lh) / (137 TFLOP/s x 32 GPUs).
  const double h = 2304, l = 24, s = 2048, v = 51200;
  const double flops = 96 * 512 * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  EXPECT_DOUBLE_EQ(row.measured, flops / (137e12 * 32));
  Plan p = sc21_recipe(1, 32, 16, 512);
  p.overlap_grad_reduce = true;  // torch DDP
  EXPECT_DOUBLE_EQ(row.predicted, simulated_step(p));
  EXPECT_EQ(row.setup,
            "24 x 2304, tp 1 pp 1 dp 32, mbs 16, gbs 512, seq 2048, full recompute, unfused "
            "attention, dropout 0.1, torch DDP");
  // The second row has the same width and depth, so the same script row: its own layout.
  ASSERT_FALSE(set.rows[1].skipped) << *set.rows[1].skipped;
  EXPECT_EQ(set.rows[1].setup,
            "24 x 2304, tp 1 pp 2 dp 2, mbs 16, gbs 64, seq 2048, full recompute, unfused "
            "attention, dropout 0.1, torch DDP");
}

TEST(ValidateSc21, LayersPerVirtualStageGiveTheInterleavedSchedule) {
  const auto set = validate_tables(
      nlohmann::json::array({table_row(24, 2304, 24, 1, 2, 4, 16, 100)}), nlohmann::json::array(),
      nlohmann::json::array({script_row(24, 2304, 2, 3, "local")}));
  ASSERT_FALSE(set.rows[0].skipped) << *set.rows[0].skipped;
  // 24 layers over pp 2 in chunks of 3: vp 4; local DDP reduces after the backward pass.
  EXPECT_EQ(set.rows[0].setup,
            "24 x 2304, tp 1 pp 2 x vp 4 dp 2, mbs 2, gbs 16, seq 2048, full recompute, unfused "
            "attention, dropout 0.1, local DDP");
  Plan p = sc21_recipe(2, 2, 2, 16);
  p.vp = 4;
  p.schedule = ScheduleKind::kInterleaved;
  EXPECT_DOUBLE_EQ(set.rows[0].predicted, simulated_step(p));
}

TEST(ValidateSc21, RowsWithoutAFullRecipeSayWhy) {
  const auto set = validate_tables(
      nlohmann::json::array({table_row(24, 2304, 24, 1, 1, 32, 512, 137)}),
      nlohmann::json::array({{{"scheme", "ZeRO-3"}, {"params_billion", 174.6}, {"n_gpus", 384}},
                             {{"scheme", "PTD-P"}, {"params_billion", 174.6}, {"n_gpus", 384}}}),
      nullptr);
  ASSERT_EQ(set.rows.size(), 3u);
  EXPECT_EQ(set.rows[0].skipped.value_or("").rfind("micro-batch size not known", 0), 0u);
  EXPECT_GT(set.rows[0].measured, 0.0);
  EXPECT_EQ(set.rows[1].name, "GPT 174.6B ZeRO-3 384 GPUs (SC21 Table 2)");
  EXPECT_NE(set.rows[1].skipped.value_or("").find("ZeRO-3"), std::string::npos);
  EXPECT_NE(set.rows[2].skipped.value_or("").find("TP x PP"), std::string::npos);
  EXPECT_EQ(set.expressed(), 0);
}

// The launch-script copy agrees with the paper's table wherever both give a value.
TEST(ValidateSc21, LaunchScriptRowsMatchTheTable) {
  const auto dir = test::source_dir() + "/tests/validation/refdata/";
  const auto table = nlohmann::json::parse(
      test::read_file(dir + "narayanan2021_megatron_a100_table1_table2.json"))["rows_table1"];
  const auto script = nlohmann::json::parse(
      test::read_file(dir + "narayanan2021_sc21_run_args.json"))["rows_table1"];
  ASSERT_EQ(table.size(), script.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table[i]["tp"], script[i]["tp"]) << i;
    EXPECT_EQ(table[i]["pp"], script[i]["pp"]) << i;
    EXPECT_EQ(table[i]["global_batch_size"], script[i]["global_batch_size"]) << i;
    EXPECT_EQ(table[i]["num_layers"], script[i]["num_layers"]) << i;
    EXPECT_EQ(table[i]["hidden_size"], script[i]["hidden_size"]) << i;
    EXPECT_EQ(table[i]["attention_heads"], script[i]["num_attention_heads"]) << i;
  }
}

TEST(ValidateSc21, EachReferenceSetHasItsPlatform) {
  EXPECT_EQ(reference_platform("x/narayanan2021_megatron_a100_table1_table2.json"), "a100-sxm-hdr");
  EXPECT_EQ(reference_platform("x/nvidia_dgxc_benchmarking_h100.json"), "h100-sxm-ndr");
}

}  // namespace
}  // namespace trainsim
