// The model Megatron-LM builds from a launch's shape arguments, for a launch given without a
// model file: Megatron-LM's defaults (GeLU of 4h, learned positions, LayerNorm, biases, tied
// embeddings), its tokenizers' vocabularies, and catalog models rebuilt from their arguments to
// their published parameter counts.
#include <gtest/gtest.h>

#include <string>

#include "sim/core/error.hpp"
#include "sim/model/params.hpp"
#include "sim/plan/megatron_args.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Model build(const std::string& args) {
  return model_from_megatron_args(parse_launch_command(args, "--megatron-args"), "launch",
                                  "--megatron-args");
}

std::string error_of(const std::string& args) {
  try {
    build(args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(built)";
}

const std::string kGpt2Small =
    "--num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 "
    "--max-position-embeddings 1024 --tokenizer-type GPT2BPETokenizer";

const std::string kLlama8b =
    "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
    "--group-query-attention --num-query-groups 8 --swiglu --untie-embeddings-and-output-weights "
    "--position-embedding-type rope --normalization RMSNorm --disable-bias-linear "
    "--max-position-embeddings 131072 --tokenizer-type NullTokenizer --vocab-size 128256";

TEST(MegatronModel, MegatronDefaultsBuildGpt2Small) {
  const Model m = build(kGpt2Small);
  EXPECT_EQ(m.ffn_kind, FfnKind::kGelu);
  EXPECT_EQ(m.ffn_hidden_size, 4 * 768);
  EXPECT_EQ(m.position_embedding, PositionEmbedding::kLearned);
  EXPECT_EQ(m.max_position_embeddings, 1024);
  EXPECT_EQ(m.norm, NormKind::kLayerNorm);
  EXPECT_TRUE(m.qkv_bias && m.attention_output_bias && m.mlp_bias);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_EQ(m.vocab_size, 50257);  // GPT-2's BPE vocabulary
  EXPECT_EQ(m.num_kv_heads, 12);
  // GPT-2 small's 124,439,808 parameters (tied embeddings, 1,024 learned positions).
  EXPECT_EQ(total_params(m), 124439808);
  EXPECT_EQ(total_params(m), total_params(load_model(test::data_path("hf/gpt2/config.json"))));
}

TEST(MegatronModel, Llama31From8bArgumentsHasItsPublishedParameters) {
  const Model m = build(kLlama8b);
  const Model catalog = test::catalog_model("llama3.1-8b");
  EXPECT_EQ(m.vocab_size, 128256);  // the null tokenizer's, its end-of-document id the last
  EXPECT_EQ(m.num_kv_heads, 8);
  EXPECT_FALSE(m.qkv_bias || m.attention_output_bias || m.mlp_bias);
  EXPECT_EQ(total_params(m), catalog.published.total);
  EXPECT_EQ(total_params(m), 8030261248);
}

TEST(MegatronModel, SwigluWithoutAWidthTakesMegatronsTwoThirdsRoundedTo64) {
  const Model m = build(kGpt2Small + " --swiglu --hidden-size 4096 --num-attention-heads 32");
  EXPECT_EQ(m.ffn_kind, FfnKind::kSwiGLU);
  EXPECT_EQ(m.ffn_hidden_size, 10880);  // int(4 x 4096 x 2/3 / 64) x 64
  EXPECT_EQ(build(kGpt2Small + " --squared-relu").ffn_kind, FfnKind::kSquaredRelu);
  EXPECT_EQ(build(kGpt2Small + " --group-query-attention").num_kv_heads, 1);
  EXPECT_EQ(build(kGpt2Small + " --kv-channels 128").head_dim, 128);
}

TEST(MegatronModel, MixtralFromItsArgumentsHasItsPublishedParameters) {
  const Model m = build(
      "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
      "--group-query-attention --num-query-groups 8 --swiglu --untie-embeddings-and-output-weights "
      "--position-embedding-type rope --normalization RMSNorm --disable-bias-linear "
      "--max-position-embeddings 32768 --tokenizer-type NullTokenizer --vocab-size 32000 "
      "--num-experts 8 --moe-router-topk 2");
  const Model catalog = test::catalog_model("mixtral-8x7b");
  EXPECT_EQ(m.moe.expert_ffn_hidden_size, 14336);  // --ffn-hidden-size where unset
  EXPECT_EQ(total_params(m), total_params(catalog));
  EXPECT_EQ(active_params(m), active_params(catalog));
}

TEST(MegatronModel, DeepSeekV3FromItsArgumentsHasItsPublishedParameters) {
  const Model catalog = test::catalog_model("deepseek-v3");
  const Model m = build(
      "--num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432 --num-attention-heads 128 "
      "--swiglu --untie-embeddings-and-output-weights --position-embedding-type rope "
      "--normalization RMSNorm --disable-bias-linear --max-position-embeddings 163840 "
      "--tokenizer-type NullTokenizer --vocab-size 129280 --multi-latent-attention "
      "--q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 "
      "--v-head-dim 128 --qk-layernorm --num-experts 256 --moe-router-topk 8 "
      "--moe-ffn-hidden-size 2048 --moe-shared-expert-intermediate-size 2048 "
      "--moe-router-enable-expert-bias --moe-layer-freq '([0]*3+[1]*58)'");
  EXPECT_EQ(m.moe.first_dense_layers, 3);
  EXPECT_EQ(m.moe.layer_interval, 1);
  EXPECT_EQ(m.head_dim, 192);
  EXPECT_EQ(total_params(m), total_params(catalog));
  EXPECT_EQ(active_params(m), active_params(catalog));
}

TEST(MegatronModel, LayerFrequencyListsBecomeLeadingDenseLayersAndIntervals) {
  const std::string moe = kGpt2Small + " --num-experts 8 --num-layers 8 --moe-layer-freq ";
  const Model every_other = build(moe + "'([0]+[1])*4'");
  EXPECT_EQ(moe_layer_count(every_other), 4);
  EXPECT_FALSE(is_moe_layer(every_other, 0));
  EXPECT_TRUE(is_moe_layer(every_other, 1));
  const Model last = build(moe + "'[0]*7+[1]'");
  EXPECT_EQ(moe_layer_count(last), 1);
  EXPECT_TRUE(is_moe_layer(last, 7));
  EXPECT_EQ(moe_layer_count(build(moe + "1")), 8);
  // An integer k routes layers 0, k, 2k, ...: the first of each group, held as a list.
  EXPECT_EQ(
      moe_layer_count(build(kGpt2Small + " --num-experts 8 --num-layers 1 --moe-layer-freq 3")), 1);
  EXPECT_EQ(moe_layer_count(build(moe + "'[0, 1, 1, 1, 1, 1, 1, 1]'")), 7);
  const Model first = build(kGpt2Small + " --num-experts 8 --moe-layer-freq 2");
  EXPECT_EQ(first.moe.layers, (std::vector<std::int64_t>{0, 2, 4, 6, 8, 10}));
  EXPECT_TRUE(is_moe_layer(first, 0));
  EXPECT_FALSE(is_moe_layer(first, 11));
  // Six MoE layers of eight GELU experts (768 x 3072 and 3072 x 768 with their biases) and a
  // router of 8 x 768, where every layer routes: six layers' dense MLPs in their place.
  const Model every = build(kGpt2Small + " --num-experts 8");
  const std::int64_t mlp = 2 * 768 * 3072 + 3072 + 768;
  EXPECT_EQ(total_params(every) - total_params(first), 6 * (8 * mlp + 8 * 768 - mlp));
  EXPECT_EQ(moe_layer_count(build(kGpt2Small + " --num-experts 8 --moe-layer-freq "
                                               "'[0]*2+([1]+[0])*5'")),
            5);
}

TEST(MegatronModel, WhatTrainsimCannotBuildIsRefusedNamingTheArgument) {
  EXPECT_NE(error_of("--hidden-size 768 --num-attention-heads 12").find("--num-layers"),
            std::string::npos);
  const std::string hf = error_of(
      "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --max-position-embeddings 8 "
      "--tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Llama-3.1-8B");
  EXPECT_NE(hf.find("--tokenizer-type"), std::string::npos) << hf;
  EXPECT_NE(hf.find("give --model"), std::string::npos) << hf;
  EXPECT_NE(error_of(kGpt2Small + " --num-experts 8 --moe-layer-freq 0").find("at least 1"),
            std::string::npos);
  EXPECT_NE(error_of(kGpt2Small + " --num-experts 8 --moe-layer-freq '[1]*11'").find("11 entries"),
            std::string::npos);
  EXPECT_NE(
      error_of(kGpt2Small + " --num-experts 8 --moe-layer-freq '[0]*12'").find("has no MoE layer"),
      std::string::npos);
  EXPECT_NE(error_of(kGpt2Small + " --position-embedding-type relative").find("not modelled"),
            std::string::npos);
  EXPECT_NE(error_of(kGpt2Small + " --group-query-attention --num-query-groups 5")
                .find("--megatron-args --num-query-groups"),
            std::string::npos);
  EXPECT_NE(error_of(kGpt2Small + " --hidden-size 0").find("positive"), std::string::npos);
  EXPECT_NE(error_of("--num-layers 2 --hidden-size 64 --num-attention-heads 4 "
                     "--max-position-embeddings 8")
                .find("--tokenizer-type"),
            std::string::npos);
}

}  // namespace
}  // namespace trainsim
