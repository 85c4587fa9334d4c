// The frameworks' layer-to-stage rules, reproduced exactly, on the cases their bug reports give.
#include <gtest/gtest.h>

#include "sim/core/error.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/vocab.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

using Counts = std::vector<std::int64_t>;

using test::seed_model;
using test::stages_without_parameters;

// What Megatron's uniform rule refuses the plan with, or "no error".
std::string megatron_refusal(const Model& m, const Plan& plan) {
  try {
    megatron_uniform_partition(m, plan, {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// nanotron issue #108: hidden 16, FFN 64, 4 heads, 2 layers, vocabulary 50277 (padded to 50278 at
// tp 2), tied embeddings, pp 2: stage 1 gets only the cast and the loss.
TEST(NanotronRule, Issue108TinyModel) {
  const Model m = seed_model("nanotron-108-tiny");
  const auto vocab = padded_vocab(m.vocab_size, 1, 2);
  EXPECT_EQ(vocab, 50278);
  const auto costs = nanotron_block_costs(m, model_blocks(m, true), vocab);
  EXPECT_EQ(costs[1], 4 * 4 * 4 * 16 + 3 * 64 * 16);  // 4096 per decoder
  EXPECT_EQ(costs[4], 50278 * 16);                    // the LM head
  const Partition p = nanotron_partition(m, 2, vocab);
  EXPECT_EQ(p.decoder_counts(), (Counts{2, 0}));
  EXPECT_EQ(p.labels(0),
            (std::vector<std::string>{"embedding", "decoder 0-1", "final_norm", "lm_head"}));
  EXPECT_EQ(p.labels(1), (std::vector<std::string>{"cast", "loss"}));
  EXPECT_EQ(stages_without_parameters(p), (Counts{1}));
}

// A 12-layer model with hidden 1024, FFN 1024, 4 heads and vocabulary 50277 at tp 1.
TEST(NanotronRule, TwelveLayersLargeVocabulary) {
  const Model m = seed_model("nanotron-12l");
  const auto at = [&](std::int64_t pp) { return nanotron_partition(m, pp, 50277); };
  EXPECT_EQ(at(2).decoder_counts(), (Counts{10, 2}));
  EXPECT_EQ(stages_without_parameters(at(2)), Counts{});
  EXPECT_EQ(at(4).decoder_counts(), (Counts{5, 5, 2, 0}));
  EXPECT_EQ(stages_without_parameters(at(4)), (Counts{3}));
  EXPECT_EQ(at(4).labels(3), (std::vector<std::string>{"cast", "loss"}));
  EXPECT_EQ(at(8).decoder_counts(), (Counts{3, 2, 3, 2, 2, 0, 0, 0}));
  EXPECT_EQ(stages_without_parameters(at(8)), (Counts{6, 7}));
  EXPECT_EQ(at(8).labels(5), (std::vector<std::string>{"final_norm", "lm_head"}));
}

// DeepSpeed's helpers on the examples of its own pull requests.
TEST(DeepSpeedRule, PartitionHelpers) {
  // PR #4053: partition_uniform spreads the remainder over the first parts.
  EXPECT_EQ(deepspeed_partition_uniform(38, 8), (Counts{0, 5, 10, 15, 20, 25, 30, 34, 38}));
  EXPECT_EQ(deepspeed_partition_uniform(3, 5), (Counts{0, 1, 2, 3, 3, 3}));
  // PR #4312 reports the original partition_balanced leaving the last part empty.
  EXPECT_EQ(deepspeed_partition_balanced({1, 1, 1, 1, 1}, 4), (Counts{0, 2, 4, 5, 5}));
  // Outputs of the original Python implementation, including its weights[-1] indexing when a
  // part would hold no item.
  EXPECT_EQ(deepspeed_partition_balanced({5, 1, 1, 1, 1, 5}, 3), (Counts{0, 1, 5, 6}));
  EXPECT_EQ(deepspeed_partition_balanced({100, 1, 1, 1, 1, 1, 1, 1, 100}, 4),
            (Counts{0, 1, 8, 9, 9}));
}

// DeepSpeed issue #5078: 42 layers, pp 16, partition_method type:transformer.
TEST(DeepSpeedRule, Issue5078LastStagesGetNoLayers) {
  const Model m = seed_model("gpt-42l");
  Plan plan;
  plan.tp = 4;
  plan.pp = 16;
  plan.seq_len = 2048;
  plan.partition = "deepspeed-type:transformer";
  const Partition p = build_partition(m, test::catalog_platform("h100-sxm-ndr"), plan);
  EXPECT_EQ(p.method, "deepspeed-type:transformer");
  EXPECT_EQ(p.decoder_counts(), (Counts{3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0, 0}));
  EXPECT_EQ(p.num_blocks(14), 0);
  EXPECT_EQ(p.labels(15), (std::vector<std::string>{"loss"}));
  EXPECT_EQ(stages_without_parameters(p), (Counts{14, 15}));
  EXPECT_EQ(deepspeed_layer_name(m, BlockKind::kDecoder), "ParallelTransformerLayerPipe");
}

TEST(DeepSpeedRule, UniformAndParameters) {
  const Model m = seed_model("gpt-42l");
  Plan plan;
  plan.tp = 4;
  plan.pp = 4;
  plan.seq_len = 2048;
  plan.partition = "deepspeed-uniform";
  const auto platform = test::catalog_platform("h100-sxm-ndr");
  // 45 layers (embedding, 42 decoders, norm, head) over 4 parts: 12, 11, 11, 11.
  EXPECT_EQ(build_partition(m, platform, plan).decoder_counts(), (Counts{11, 11, 11, 9}));
  plan.partition = "deepspeed-parameters";
  const Partition p = build_partition(m, platform, plan);
  EXPECT_EQ(p.method, "deepspeed-parameters");
  EXPECT_EQ(p.dropped_layers, 0);
  std::int64_t total = 0;
  for (auto c : p.decoder_counts()) total += c;
  EXPECT_EQ(total, 42);
}

TEST(MegatronRule, UniformAndUnevenOptions) {
  const Model m = test::catalog_model("llama3.1-70b");  // 80 layers
  Plan plan;
  plan.pp = 4;
  EXPECT_EQ(megatron_uniform_partition(m, plan, {}).decoder_counts(), (Counts{20, 20, 20, 20}));
  plan.decoder_first_pipeline_num_layers = 18;
  plan.decoder_last_pipeline_num_layers = 18;
  EXPECT_EQ(megatron_uniform_partition(m, plan, {}).decoder_counts(), (Counts{18, 22, 22, 18}));
  plan.decoder_last_pipeline_num_layers = -1;
  EXPECT_THROW(megatron_uniform_partition(m, plan, {}), InputError);  // 62 over 3 stages
  plan.decoder_first_pipeline_num_layers = 17;
  EXPECT_EQ(megatron_uniform_partition(m, plan, {}).decoder_counts(), (Counts{17, 21, 21, 21}));
  plan = Plan{};
  plan.pp = 3;
  plan.account_for_embedding_in_pipeline_split = true;
  // 80 + 1 = 81 units over 3 stages: 27 each, the first one for the embedding.
  EXPECT_EQ(megatron_uniform_partition(m, plan, {}).decoder_counts(), (Counts{26, 27, 27}));
  plan.account_for_loss_in_pipeline_split = true;  // 82 units: not divisible by 3
  EXPECT_EQ(megatron_refusal(m, plan),
            "--account-for-embedding-in-pipeline-split: makes 82 layers (decoders plus "
            "embedding/loss), which Megatron-LM requires to be divisible by pp (3)");
}

// Megatron-Core (core_r0.12) splits each physical stage's count over its vp chunks, the first
// and last stages theirs too, and lays the layers out chunk by chunk over the stages
// (get_transformer_layer_offset: chunk c of stage 0 starts at c x (first + middle + last) / vp).
TEST(MegatronRule, UnevenEndsWithInterleaving) {
  const Model m = test::catalog_model("llama3.1-70b");  // 80 layers
  Plan plan;
  plan.pp = 4;
  plan.vp = 2;
  plan.decoder_first_pipeline_num_layers = 8;
  plan.decoder_last_pipeline_num_layers = 8;
  // 64 layers over the 2 middle stages: 32 each, 16 a chunk; the ends 4 a chunk.
  const Partition p = megatron_uniform_partition(m, plan, {});
  EXPECT_EQ(p.decoder_counts(), (Counts{4, 16, 16, 4, 4, 16, 16, 4}));
  EXPECT_EQ(p.labels(p.virtual_stage(0, 1)), (std::vector<std::string>{"decoder 40-43"}));
  EXPECT_EQ(p.labels(p.virtual_stage(3, 1)),
            (std::vector<std::string>{"decoder 76-79", "final_norm", "lm_head", "loss"}));
  plan.decoder_last_pipeline_num_layers = 7;  // 7 over 2 chunks
  EXPECT_EQ(megatron_refusal(m, plan),
            "--decoder-last-pipeline-num-layers: puts 7 layers on the last stage, which "
            "Megatron-LM requires to be divisible by vp (2)");
  plan.decoder_first_pipeline_num_layers = 6;  // 80 - 6 - 8 = 66 over 2 stages: 33 each
  plan.decoder_last_pipeline_num_layers = 8;
  EXPECT_EQ(megatron_refusal(m, plan),
            "--decoder-first-pipeline-num-layers: puts 33 layers on each middle stage, which "
            "Megatron-LM requires to be divisible by vp (2)");
}

// The embedding counted as a layer under interleaving: 81 units over pp 3 (27 a stage) and vp 3
// (9 a chunk); only the first virtual stage, which holds the embedding, builds one fewer.
TEST(MegatronRule, EmbeddingInTheSplitWithInterleaving) {
  const Model m = test::catalog_model("llama3.1-70b");  // 80 layers
  Plan plan;
  plan.pp = 3;
  plan.vp = 3;
  plan.account_for_embedding_in_pipeline_split = true;
  EXPECT_EQ(megatron_uniform_partition(m, plan, {}).decoder_counts(),
            (Counts{8, 9, 9, 9, 9, 9, 9, 9, 9}));
  plan.vp = 2;  // 27 a stage over 2 chunks
  EXPECT_EQ(megatron_refusal(m, plan),
            "--account-for-embedding-in-pipeline-split: puts 27 layers on each stage "
            "(embedding/loss included), which Megatron-LM requires to be divisible by vp (2)");
}

TEST(MegatronRule, IndivisibleLayersAreDropped) {
  const Model m = seed_model("gpt-42l");
  Plan plan;
  plan.pp = 16;
  const Partition p = megatron_uniform_partition(m, plan, {});
  EXPECT_EQ(p.decoder_counts(), Counts(16, 2));
  EXPECT_EQ(p.dropped_layers, 10);
}

TEST(MegatronRule, Layouts) {
  const Model m = seed_model("nanotron-12l");  // 12 layers
  auto layout = [&](const std::string& s, std::int64_t pp) {
    return megatron_layout_partition(m, s, pp, 1, "--partition");
  };
  EXPECT_EQ(layout("Et*3|t*3,|t*3|t*3L", 4).decoder_counts(), (Counts{3, 3, 3, 3}));
  EXPECT_EQ(layout("E(t|)*3t*9L", 4).decoder_counts(), (Counts{1, 1, 1, 9}));
  const Partition tail = layout("Et*6|t*6|L", 3);
  EXPECT_EQ(tail.labels(2), (std::vector<std::string>{"final_norm", "lm_head", "loss"}));
  EXPECT_EQ(tail.megatron_layout(), "Et*6|t*6|L");
  const Partition empty = layout("Et*6||t*6L", 3);
  EXPECT_EQ(empty.num_blocks(1), 0);
  EXPECT_EQ(layout("Et*4|t*4|t*2L", 3).dropped_layers, 2);
  auto error = [&](const std::string& s, std::int64_t pp) {
    try {
      layout(s, pp);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error("Et*6|t*6L", 3), "--partition: the layout has 2 stages but pp is 3");
  EXPECT_EQ(error("t*6|Et*6L", 2),
            "--partition: the layout must start with the embedding E, exactly once");
  EXPECT_EQ(error("Et*6|t*7L", 2),
            "--partition: the layout has 13 decoder layers but the model has 12");
  EXPECT_EQ(error("Et*6|x*6L", 2),
            "--partition: invalid layout character 'x' (E embedding, t decoder layer, m "
            "multi-token-prediction module, L loss, | stage boundary)");
  EXPECT_EQ(error("Et*6|t*6mL", 2),
            "--partition: the layout has 1 multi-token-prediction module (m) but the model "
            "trains 0 (--mtp-num-layers sets how many)");
}

// Megatron-Core's rules for multi-token-prediction modules in a layout
// (pipeline_parallel_layer_layout.py): as many as the model trains, after every decoder layer,
// in one stage, the last model chunk of its rank; each module runs in its stage and hands on the
// main hidden states with its own.
TEST(MegatronRule, LayoutsWithMultiTokenPrediction) {
  Model m = seed_model("nanotron-12l");
  m.mtp_layers = 2;
  auto layout = [&](const std::string& s, std::int64_t pp, std::int64_t vp) {
    return megatron_layout_partition(m, s, pp, vp, "--partition");
  };
  const Partition p = layout("Et*6|t*6m*2L", 2, 1);
  EXPECT_EQ(p.labels(1), (std::vector<std::string>{"decoder 6-11", "mtp 0", "mtp 1", "final_norm",
                                                   "lm_head", "loss"}));
  EXPECT_EQ(p.megatron_layout(), "Et*6|t*6m*2L");
  EXPECT_EQ(p.count(1, BlockKind::kMtp), 2);
  // Standalone: the modules in the last chunk of rank 0, the loss alone on rank 1.
  EXPECT_EQ(layout("Et*4|t*4|t*4mm|L", 2, 2).count(2, BlockKind::kMtp), 2);
  auto error = [&](const std::string& s, std::int64_t pp, std::int64_t vp) {
    try {
      layout(s, pp, vp);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error("Et*6|t*6mL", 2, 1),
            "--partition: the layout has 1 multi-token-prediction module (m) but the model "
            "trains 2 (--mtp-num-layers 0 trains none)");
  EXPECT_EQ(error("Et*6m|t*6mL", 2, 1),
            "--partition: all multi-token-prediction modules (m) must be in one stage");
  EXPECT_EQ(error("Et*6|mmt*6L", 2, 1),
            "--partition: decoder layers (t) must all come before the multi-token-prediction "
            "modules (m)");
  EXPECT_EQ(error("Et*6|t*6mm||L", 2, 2),
            "--partition: the multi-token-prediction modules (m) must be in the last model chunk "
            "of their pipeline rank (Megatron-Core's rule), not in chunk 1 of 2");
  // Without a layout Megatron-Core builds them on the last stage.
  Plan plan;
  plan.pp = 2;
  const Partition uniform = megatron_uniform_partition(m, plan, {});
  EXPECT_EQ(uniform.megatron_layout(), "Et*6|t*6m*2L");
}

TEST(PartitionSpec, Names) {
  EXPECT_EQ(parse_partition_spec("deepspeed-type:transformer|embed", "--partition").argument,
            "transformer|embed");
  EXPECT_EQ(parse_partition_spec("Et*4|t*4L", "--partition").rule, PartitionRule::kLayout);
  EXPECT_THROW(parse_partition_spec("deepspeed-type:(", "--partition"), InputError);
  EXPECT_THROW(parse_partition_spec("greedy", "--partition"), InputError);
}

}  // namespace
}  // namespace trainsim
