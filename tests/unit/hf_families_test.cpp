// The Hugging Face architectures read beside the catalog's families: Gemma 1-3, OLMo 2, OLMoE,
// Phi-3 and GLM-4.5. Each config.json gives its checkpoint's published parameter count; what
// they add is checked in closed form (q/k norms across the heads, four norms a layer with Gemma's
// window patterns, GLM's biases on q/k/v alone) and their tensors are named as their checkpoints
// name them.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "sim/core/error.hpp"
#include "sim/cost/rank_params.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/model/params.hpp"
#include "sim/reshard/parameters.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Model hf(const std::string& dir) {
  return load_model(test::data_path("hf/" + dir + "/config.json"));
}

TEST(HfFamilies, CountsOfThePublishedCheckpoints) {
  struct Case {
    const char* dir;
    std::int64_t total;
  };
  // Keras Hub's presets state Gemma's counts to the parameter: gemma_7b_en 8,537,680,896,
  // gemma2_2b_en 2,614,341,888, gemma2_9b_en 9,241,705,984, gemma3_1b 999,885,952, and
  // gemma3_27b_text 27,009,002,240 with a vocabulary of 262,144, where Hugging Face's checkpoint
  // holds 262,208 rows (64 x 5376 more, tied). OLMo 2 7B and Phi-3 mini, published as 7.3B and
  // 3.8B: 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 + the q/k norms 2 x 4096) + 2 x 100352
  // x 4096 + 4096; 32 x (4 x 3072^2 + 3 x 3072 x 8192 + 2 x 3072) + 2 x 32064 x 3072 + 3072.
  for (const auto& c :
       {Case{"gemma-7b", 8'537'680'896}, Case{"gemma-2-2b", 2'614'341'888},
        Case{"gemma-2-9b", 9'241'705'984}, Case{"gemma-3-1b-pt", 999'885'952},
        Case{"gemma-3-27b-pt", 27'009'002'240 + 64 * 5376}, Case{"olmo-2-1124-7b", 7'298'617'344},
        Case{"phi-3-mini-4k-instruct", 3'821'079'552}}) {
    const Model m = hf(c.dir);
    EXPECT_EQ(total_params(m), c.total) << c.dir;
    EXPECT_FALSE(m.moe.is_moe()) << c.dir;
  }
}

// OLMoE-1B-7B, published as 6.9B in all and 1.3B active (its README): 16 x (4 x 2048^2, the q/k
// norms 2 x 2048, 64 experts of 3 x 2048 x 1024, the router 64 x 2048, 2 norms) + 2 x 50304 x
// 2048 + 2048; active with 8 experts and both embeddings. GLM-4.5-Air and GLM-4.5, published as
// 106B with 12B active and 355B with 32B active (the figures cut, not rounded: 106.85B, 12.80B
// and 32.86B active without the input embedding), their multi-token-prediction layer apart.
// GLM-4.5's 352.80B is 0.6 % under its card's 355B, which no reading of the config reaches.
TEST(HfFamilies, MixtureOfExpertsCounts) {
  const Model olmoe = hf("olmoe-1b-7b-0924");
  EXPECT_EQ(total_params(olmoe), 6'919'161'856);
  EXPECT_EQ(active_params(olmoe) + 50304 * 2048, 1'282'017'280);
  EXPECT_EQ(moe_layer_count(olmoe), 16);

  const Model air = hf("glm-4.5-air");
  EXPECT_EQ(total_params(air), 106'852'245'504);
  EXPECT_EQ(active_params(air), 12'803'366'912);
  EXPECT_EQ(moe_layer_count(air), 45);
  EXPECT_EQ(air.mtp_layers, 1);
  const Model glm = hf("glm-4.5");
  EXPECT_EQ(total_params(glm), 352'797'814'784);
  EXPECT_EQ(active_params(glm), 32'856'305'664);
  EXPECT_EQ(moe_layer_count(glm), 89);
  // Per layer: q 5120 x 12288 and k, v 5120 x 1024 with their biases, o 12288 x 5120 without
  // one, the q/k norms of head_dim 128 (use_qk_norm; Air has none).
  EXPECT_EQ(count_params(glm).layer_attention,
            2 * 5120 * 12288 + 2 * 5120 * 1024 + 12288 + 2 * 1024 + 2 * 128);
  EXPECT_EQ(count_params(air).layer_attention,
            2 * 4096 * 12288 + 2 * 4096 * 1024 + 12288 + 2 * 1024);
  EXPECT_TRUE(glm.moe.router_expert_bias);
  EXPECT_EQ(glm.moe.shared_expert_ffn_hidden_size, 1536);
}

// Qwen's mlp_only_layers (transformers: an MoE layer where (i + 1) % decoder_sparse_step == 0 and
// i is not listed) and DeepSeek's moe_layer_freq (from first_k_dense_replace on, i % freq == 0):
// held as leading dense layers and equal groups where they make one, else as a list. Qwen3-30B-A3B
// with its first two layers dense trades their 128 experts of 3 x 2048 x 768 and router of
// 128 x 2048 for dense MLPs of 3 x 2048 x 6144. DeepSeek-V3 with moe_layer_freq 2 routes layers
// 4, 6, ..., 60 (29 of them, where 58 routed): 29 layers of 256 experts of 3 x 7168 x 2048, a
// shared one like them and a router of 256 x 7168 become dense MLPs of 3 x 7168 x 18432.
TEST(HfFamilies, MoeLayersByTheConfigsOwnRule) {
  const std::string dir = test::make_temp_dir();
  const auto edited = [&dir](const std::string& model, const std::string& from,
                             const std::string& to) {
    std::string text = test::read_file(test::data_path("hf/" + model + "/config.json"));
    text.replace(text.find(from), from.size(), to);
    const std::string path = dir + "/" + model + ".json";
    test::write_file(path, text);
    return path;
  };
  const Model qwen = hf("qwen3-30b-a3b");
  const Model first_two =
      load_model(edited("qwen3-30b-a3b", "\"mlp_only_layers\": []", "\"mlp_only_layers\": [0, 1]"));
  EXPECT_EQ(first_two.moe.first_dense_layers, 2);
  EXPECT_EQ(moe_layer_count(first_two), 46);
  EXPECT_EQ(total_params(qwen) - total_params(first_two),
            2 * (128 * 3 * 2048 * 768 + 128 * 2048 - 3 * 2048 * 6144));
  const auto error = [](const std::string& path) {
    try {
      (void)load_model(path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  const Model fifth =
      load_model(edited("qwen3-30b-a3b", "\"mlp_only_layers\": []", "\"mlp_only_layers\": [5]"));
  EXPECT_EQ(moe_layer_count(fifth), 47);
  EXPECT_TRUE(is_moe_layer(fifth, 4));
  EXPECT_FALSE(is_moe_layer(fifth, 5));
  EXPECT_TRUE(is_moe_layer(fifth, 6));
  EXPECT_EQ(total_params(qwen) - total_params(fifth),
            (total_params(qwen) - total_params(first_two)) / 2);
  const Model v3 = hf("deepseek-v3");
  const Model every_other =
      load_model(edited("deepseek-v3", "\"moe_layer_freq\": 1", "\"moe_layer_freq\": 2"));
  EXPECT_EQ(every_other.moe.layers.front(), 4);
  EXPECT_EQ(every_other.moe.layers.back(), 60);
  EXPECT_EQ(moe_layer_count(every_other), 29);
  EXPECT_FALSE(is_moe_layer(every_other, 3));
  EXPECT_FALSE(is_moe_layer(every_other, 59));
  const std::int64_t routed = std::int64_t{256} * 3 * 7168 * 2048 + 3 * 7168 * 2048 + 256 * 7168;
  EXPECT_EQ(total_params(v3) - total_params(every_other),
            29 * (routed - std::int64_t{3} * 7168 * 18432));
  std::string all = "[";
  for (int i = 0; i < 48; ++i) all += (i > 0 ? ", " : "") + std::to_string(i);
  EXPECT_NE(
      error(edited("qwen3-30b-a3b", "\"mlp_only_layers\": []", "\"mlp_only_layers\": " + all + "]"))
          .find("$.mlp_only_layers: leaves no MoE layer"),
      std::string::npos);
}

// OLMo's q and k norms span all heads: 4096 weights each, split over TP with the heads (a rank
// of TP 4 holds 1024 of each), where Qwen3's per-head norms of 128 are whole on every rank; their
// kernels run over each token's row of the rank's heads.
TEST(HfFamilies, QkNormsAcrossTheHeads) {
  const Model olmo = hf("olmo-2-1124-7b");
  ASSERT_TRUE(olmo.qk_norm_across_heads);
  EXPECT_EQ(olmo.qk_norm_widths(), 2 * 4096);
  Model per_head = olmo;
  per_head.qk_norm_across_heads = false;
  EXPECT_EQ(per_head.qk_norm_widths(), 2 * 128);
  EXPECT_EQ(layer_params_per_rank(olmo, 4) - layer_params_per_rank(per_head, 4), 2 * 1024 - 256);

  Plan plan;
  plan.tp = 4;
  plan.seq_len = 4096;
  const BlockPass fwd = block_pass(BlockKind::kDecoder, false, layer_shape(olmo, plan, 100352));
  const auto q = std::find_if(fwd.kernels.begin(), fwd.kernels.end(),
                              [](const KernelSpec& k) { return k.name == "q_layernorm"; });
  ASSERT_NE(q, fwd.kernels.end());
  EXPECT_EQ(q->shape, (KernelShape{MemoryShape{"rmsnorm", 4096, 1024}}));

  const auto t = model_parameters(olmo);
  const auto norm = std::find_if(t.begin(), t.end(), [](const ParamSpec& p) {
    return p.name == "model.layers.0.self_attn.q_norm.weight";
  });
  ASSERT_NE(norm, t.end());
  EXPECT_EQ(norm->shape, (std::vector<std::int64_t>{4096}));
  EXPECT_EQ(norm->split, TpSplit::kRows);
}

// Gemma 2 alternates a 4096-token window with global attention (layers 1, 3, ...), Gemma 3 keeps
// one global layer in six (5, 11, ...); both have four norms a layer and Gemma 3 per-head q/k
// norms. The soft-capping of Gemma 2 and the vision tower of Gemma 3's multimodal checkpoint
// are said to be left out.
TEST(HfFamilies, GemmaWindowsNormsAndWhatIsLeftOut) {
  const Model g2 = hf("gemma-2-9b");
  EXPECT_TRUE(g2.sandwich_norms);
  EXPECT_EQ(g2.ffn_kind, FfnKind::kGeGLU);
  EXPECT_TRUE(g2.tied_embeddings);
  EXPECT_EQ(g2.local_attention.size, 4096);
  EXPECT_TRUE(is_local_attention_layer(g2, 0));
  EXPECT_FALSE(is_local_attention_layer(g2, 1));
  EXPECT_TRUE(is_local_attention_layer(g2, 40));
  ASSERT_EQ(g2.unmodelled.size(), 2u);
  EXPECT_NE(g2.unmodelled[0].note.find("$.attn_logit_softcapping"), std::string::npos);
  EXPECT_NE(g2.unmodelled[1].note.find("$.final_logit_softcapping"), std::string::npos);

  const Model g3 = hf("gemma-3-27b-pt");
  EXPECT_TRUE(g3.qk_norm);
  EXPECT_FALSE(g3.qk_norm_across_heads);
  EXPECT_EQ(g3.vocab_size, 262208);  // Gemma3TextConfig's default: the text_config omits it
  EXPECT_EQ(g3.local_attention.size, 1024);
  for (std::int64_t l = 0; l < 12; ++l) {
    EXPECT_EQ(is_local_attention_layer(g3, l), l != 5 && l != 11) << l;
  }
  ASSERT_EQ(g3.unmodelled.size(), 1u);
  EXPECT_NE(g3.unmodelled[0].note.find("$.vision_config"), std::string::npos);
  EXPECT_TRUE(hf("gemma-3-1b-pt").unmodelled.empty());  // its soft-capping keys are null
  EXPECT_FALSE(hf("gemma-7b").sandwich_norms);
}

std::map<std::string, ParamSpec> tensors(const Model& m) {
  std::map<std::string, ParamSpec> out;
  for (auto& p : model_parameters(m)) out.emplace(p.name, p);
  return out;
}

// Each checkpoint's own names: Gemma's four norms (the multimodal one under language_model.),
// OLMo 2's norms after attention and the MLP, Phi-3's fused projections; the tensors add up to
// the count.
TEST(HfFamilies, TensorsNamedAsTheCheckpointsNameThem) {
  const auto g3 = tensors(hf("gemma-3-27b-pt"));
  for (const char* n : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                        "post_feedforward_layernorm"}) {
    EXPECT_TRUE(g3.count(std::string("language_model.model.layers.61.") + n + ".weight")) << n;
  }
  EXPECT_TRUE(g3.count("language_model.model.layers.0.self_attn.q_norm.weight"));
  const auto olmo = tensors(hf("olmo-2-1124-7b"));
  EXPECT_TRUE(olmo.count("model.layers.0.post_feedforward_layernorm.weight"));
  EXPECT_FALSE(olmo.count("model.layers.0.input_layernorm.weight"));
  const auto phi = tensors(hf("phi-3-mini-4k-instruct"));
  ASSERT_TRUE(phi.count("model.layers.0.self_attn.qkv_proj.weight"));
  EXPECT_EQ(phi.at("model.layers.0.self_attn.qkv_proj.weight").shape,
            (std::vector<std::int64_t>{3 * 3072, 3072}));
  ASSERT_TRUE(phi.count("model.layers.0.mlp.gate_up_proj.weight"));
  EXPECT_EQ(phi.at("model.layers.0.mlp.gate_up_proj.weight").shape,
            (std::vector<std::int64_t>{2 * 8192, 3072}));
  EXPECT_FALSE(phi.count("model.layers.0.self_attn.q_proj.weight"));
  for (const char* dir : {"gemma-2-9b", "gemma-3-27b-pt", "olmo-2-1124-7b", "olmoe-1b-7b-0924",
                          "phi-3-mini-4k-instruct", "glm-4.5-air"}) {
    const Model m = hf(dir);
    std::int64_t main = 0;
    for (const auto& p : model_parameters(m)) main += p.block == BlockKind::kMtp ? 0 : p.numel();
    EXPECT_EQ(main, total_params(m)) << dir;
  }
}

}  // namespace
}  // namespace trainsim
