// trainsim validate on Megatron-LM README's weak-scaling table: the measured step is Megatron-LM's
// FLOP count over the table's rate, the prediction the fastest of the choices the README leaves
// out (micro-batch, virtual pipeline, recomputation) that fits, and the rows are reported apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/validate/validate.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

nlohmann::json row_1_7b() {
  return {{"model_size", "1.7B"},
          {"attention_heads", 16},
          {"hidden_size", 2048},
          {"num_layers", 24},
          {"tp", 1},
          {"pp", 1},
          {"dp", 48},
          {"n_gpus", 48},
          {"global_batch_size", 192},
          {"tflops_per_gpu", 408.8}};
}

ValidationSet validate_rows(const nlohmann::json& rows) {
  const auto path = test::make_temp_dir() + "/megatron_lm_readme_h100_weak_scaling.json";
  test::write_file(path, nlohmann::json{{"rows", rows}}.dump());
  return validate_reference(path, test::catalog_platform("h100-sxm-ndr")).at(0);
}

TEST(ValidateReadme, MeasuredIsMegatronsFlopsOverTheRatePredictedTheFastestChoice) {
  const auto set = validate_rows(nlohmann::json::array({row_1_7b()}));
  ASSERT_EQ(set.rows.size(), 1u);
  const auto& row = set.rows[0];
  ASSERT_FALSE(row.skipped) << *row.skipped;
  EXPECT_EQ(row.name, "GPT 1.7B 48 GPUs (Megatron-LM README)");
  EXPECT_TRUE(row.half.empty());
  // 12 B s l h^2 (1 + 4 + 1 + s/h + V/2lh) with B 192, s 4096, l 24, h 2048, V 131,072.
  const double B = 192, s = 4096, l = 24, h = 2048, V = 131072;
  const double flops = 12 * B * s * l * h * h * (6 + s / h + V / (2 * l * h));
  EXPECT_DOUBLE_EQ(row.measured, flops / (408.8e12 * 48));
  // Untied GPT of 4h GeLU, learned positions, biases; every choice of mbs 1/2/4 and no or
  // selective recomputation fits on 80 GB at tp 1 here, so the prediction is the fastest of six.
  Model m;
  m.name = row.name;
  m.num_layers = 24;
  m.hidden_size = 2048;
  m.num_attention_heads = m.num_kv_heads = 16;
  m.head_dim = 128;
  m.ffn_kind = FfnKind::kGelu;
  m.ffn_hidden_size = 4 * 2048;
  m.vocab_size = 131072;
  m.tied_embeddings = false;
  m.position_embedding = PositionEmbedding::kLearned;
  m.max_position_embeddings = 4096;
  m.norm = NormKind::kLayerNorm;
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = true;
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  double fastest = std::numeric_limits<double>::infinity();
  for (std::int64_t mbs : {1, 2, 4}) {
    for (Recompute r : {Recompute::kNone, Recompute::kSelective}) {
      Plan p;
      p.dp = 48;
      p.mbs = mbs;
      p.gbs = 192;
      p.seq_len = 4096;
      p.zero = 1;
      p.overlap_grad_reduce = p.overlap_param_gather = true;
      p.recompute = r;
      fastest = std::min(fastest, evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s);
    }
  }
  EXPECT_DOUBLE_EQ(row.predicted, fastest);
  EXPECT_NE(row.setup.find("fastest of 6 that fit"), std::string::npos) << row.setup;
  // The run is slower than every choice (0.452 s measured): the likely cause says so.
  EXPECT_EQ(row.note.rfind("slower than every choice", 0), 0u) << row.note;
}

TEST(ValidateReadme, ARowWhoseLayoutIsNotItsGpuCountNamesItsPath) {
  auto bad = row_1_7b();
  bad["n_gpus"] = 64;
  try {
    validate_rows(nlohmann::json::array({bad}));
    FAIL() << "accepted tp x pp x dp != n_gpus";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("$.rows[0].n_gpus"), std::string::npos) << e.what();
  }
  auto no_rate = row_1_7b();
  no_rate.erase("tflops_per_gpu");
  const auto set = validate_rows(nlohmann::json::array({no_rate}));
  ASSERT_TRUE(set.rows[0].skipped);
  EXPECT_EQ(*set.rows[0].skipped, "no TFLOP/s per GPU or GPU count");
}

// The committed table: all nine rows expressed (every one has a choice that fits).
TEST(ValidateReadme, TheCommittedTableIsExpressed) {
  const auto set = validate_reference(test::source_dir() +
                                          "/tests/validation/refdata/"
                                          "megatron_lm_readme_h100_weak_scaling.json",
                                      test::catalog_platform("h100-sxm-ndr"))
                       .at(0);
  EXPECT_EQ(set.rows.size(), 9u);
  EXPECT_EQ(set.expressed(), 9);
}

}  // namespace
}  // namespace trainsim
