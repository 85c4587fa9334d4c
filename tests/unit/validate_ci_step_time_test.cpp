// trainsim validate on Megatron-LM's CI iteration times: the CI file gives two sets (memory, then
// step time); a step-time row's prediction is the simulated step of the run's plan, built by
// Megatron-LM's rules from its arguments; the rows are reported apart (no half of the split) with
// the likely cause of their error.
#include <gtest/gtest.h>

#include <string>

#include "sim/evaluate/evaluate.hpp"
#include "sim/validate/validate.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

std::vector<ValidationSet> ci_sets() {
  return validate_reference(
      test::source_dir() + "/tests/validation/refdata/megatron_lm_ci_golden_values_h100.json",
      test::catalog_platform("h100-sxm-ndr"));
}

const ValidationRow& row_named(const ValidationSet& set, const std::string& name) {
  for (const auto& r : set.rows) {
    if (r.name == name) return r;
  }
  throw std::runtime_error("no row " + name);
}

TEST(ValidateCiStepTime, TheCiFileGivesMemoryThenStepTime) {
  const auto sets = ci_sets();
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0].quantity, Quantity::kMemory);
  EXPECT_EQ(sets[1].quantity, Quantity::kStepTime);
  EXPECT_EQ(sets[1].rows.size(), 139u);
  EXPECT_EQ(sets[1].expressed(), 67);
  for (const auto& r : sets[1].rows) {
    if (r.skipped) continue;
    EXPECT_TRUE(r.half.empty()) << r.name;  // never fitted, never checked against the targets
    EXPECT_FALSE(r.note.empty()) << r.name;
    EXPECT_GT(r.predicted, 0) << r.name;
  }
  // A run with no GPU count is skipped for time: its data-parallel size sets the step.
  EXPECT_EQ(*row_named(sets[1], "gpt3_mcore_te_tp1_pp4_vp1_resume_torch_dist").skipped,
            "GPU count not given, and the data-parallel size sets the step");
}

// gpt3_7b_tp4_pp1_memory_speed by hand: 32 layers of 4096 (32 heads, 8 KV groups), GeLU MLP of
// 4h, learned positions for 8192 tokens, LayerNorm, biases, untied embeddings, vocabulary 131,073;
// tp 4 x dp 2 on 8 GPUs, micro-batch 2 of 8192 tokens, global batch 8, the distributed optimizer
// with overlapped gradient reduction and parameter gather, Transformer Engine's fused attention.
TEST(ValidateCiStepTime, PredictionIsTheSimulatedStepOfTheRunsPlan) {
  const auto sets = ci_sets();
  const auto& row = row_named(sets[1], "gpt3_7b_tp4_pp1_memory_speed");
  ASSERT_FALSE(row.skipped);
  EXPECT_DOUBLE_EQ(row.measured, 1.11491);
  Model m;
  m.name = row.name;
  m.num_layers = 32;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.ffn_kind = FfnKind::kGelu;
  m.ffn_hidden_size = 4 * 4096;
  m.vocab_size = 131073;
  m.tied_embeddings = false;
  m.position_embedding = PositionEmbedding::kLearned;
  m.max_position_embeddings = 8192;
  m.norm = NormKind::kLayerNorm;
  m.qkv_bias = m.attention_output_bias = m.mlp_bias = true;
  Plan p;
  p.tp = 4;
  p.dp = 2;
  p.mbs = 2;
  p.gbs = 8;
  p.seq_len = 8192;
  p.zero = 1;
  p.overlap_grad_reduce = p.overlap_param_gather = true;
  p.attention_dropout = p.hidden_dropout = 0.1;  // its arguments leave Megatron-LM's defaults
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const double step = evaluate(m, pf, p, build_partition(m, pf, p)).sim.step_time_s;
  EXPECT_DOUBLE_EQ(row.predicted, step);
  EXPECT_NE(row.note.find("deterministic mode"), std::string::npos) << row.note;
  // The toy runs (hidden 512) are host-bound, and say so.
  EXPECT_NE(row_named(sets[1], "gpt3_mcore_tp1_pp2").note.find("bound by the host"),
            std::string::npos);
}

}  // namespace
}  // namespace trainsim
