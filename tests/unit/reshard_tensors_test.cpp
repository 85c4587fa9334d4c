// trainsim reshard's tensor list: every tensor of every catalog model, named as its Hugging Face
// checkpoint names it, with the shape and TP split the model's architecture gives it.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "sim/model/params.hpp"
#include "sim/reshard/layout_spec.hpp"
#include "sim/reshard/shards.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

std::map<std::string, ParamSpec> by_name(const Model& m) {
  std::map<std::string, ParamSpec> out;
  for (auto& p : model_parameters(m)) out.emplace(p.name, p);
  return out;
}

void expect_tensor(const std::map<std::string, ParamSpec>& t, const std::string& name,
                   const std::vector<std::int64_t>& shape, TpSplit split) {
  const auto it = t.find(name);
  ASSERT_NE(it, t.end()) << name;
  EXPECT_EQ(it->second.shape, shape) << name;
  EXPECT_EQ(it->second.split, split) << name;
}

// The main model's tensors add up to its parameter count and each multi-token-prediction
// module's to its own, for every model of the catalog (multi-head latent attention, shared
// experts, dense leading or interleaved layers, q/k norms, sinks, biases, four norms a layer).
TEST(ReshardTensors, SumToTheParameterCount) {
  int models = 0;
  for (const auto& file : std::filesystem::directory_iterator(test::source_dir() + "/models")) {
    const Model m = test::catalog_model(file.path().stem().string());
    std::int64_t main = 0, mtp = 0;
    for (const auto& p : model_parameters(m))
      (p.block == BlockKind::kMtp ? mtp : main) += p.numel();
    EXPECT_EQ(main, total_params(m)) << m.name;
    EXPECT_EQ(mtp, m.mtp_layers * mtp_module_params(m)) << m.name;
    ++models;
  }
  EXPECT_EQ(models, 22);
  std::int64_t total = 0;
  for (const auto& p : model_parameters(test::catalog_model("llama3.1-8b"))) total += p.numel();
  EXPECT_EQ(total, 8'030'261'248);
}

// DeepSeek-V3 as its checkpoint holds it: MLA's down-projections replicated over TP and its
// up-projections split, 3 dense layers then 58 MoE layers of a router, 256 experts and a shared
// expert, no expert-bias tensor (a buffer), and the multi-token-prediction module as layer 61.
TEST(ReshardTensors, DeepSeekV3AsItsCheckpointHoldsIt) {
  const Model ds = test::catalog_model("deepseek-v3");
  const auto t = by_name(ds);
  const auto rep = TpSplit::kReplicated, rows = TpSplit::kRows, cols = TpSplit::kColumns;
  expect_tensor(t, "model.layers.0.self_attn.q_a_proj.weight", {1536, 7168}, rep);
  expect_tensor(t, "model.layers.0.self_attn.q_a_layernorm.weight", {1536}, rep);
  expect_tensor(t, "model.layers.0.self_attn.q_b_proj.weight", {128 * 192, 1536}, rows);
  expect_tensor(t, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight", {512 + 64, 7168}, rep);
  expect_tensor(t, "model.layers.0.self_attn.kv_a_layernorm.weight", {512}, rep);
  expect_tensor(t, "model.layers.0.self_attn.kv_b_proj.weight", {128 * 256, 512}, rows);
  expect_tensor(t, "model.layers.0.self_attn.o_proj.weight", {7168, 128 * 128}, cols);
  expect_tensor(t, "model.layers.2.mlp.down_proj.weight", {7168, 18432}, cols);
  EXPECT_EQ(t.count("model.layers.3.mlp.down_proj.weight"), 0u);
  expect_tensor(t, "model.layers.3.mlp.gate.weight", {256, 7168}, rep);
  EXPECT_EQ(t.count("model.layers.3.mlp.gate.bias"), 0u);
  expect_tensor(t, "model.layers.60.mlp.experts.255.gate_proj.weight", {2048, 7168}, rows);
  expect_tensor(t, "model.layers.60.mlp.shared_experts.down_proj.weight", {7168, 2048}, cols);
  expect_tensor(t, "model.layers.61.eh_proj.weight", {7168, 2 * 7168}, rows);
  expect_tensor(t, "model.layers.61.mlp.experts.0.up_proj.weight", {2048, 7168}, rows);
  EXPECT_EQ(t.at("model.layers.61.shared_head.norm.weight").block, BlockKind::kMtp);
  // A dense layer 2 + 7 + 3 tensors, an MoE layer 2 + 7 + 1 + 256 x 3 + 3, the module 3 more
  // and its norm; the embedding, the final norm and the LM head.
  EXPECT_EQ(t.size(), 3u * 12 + 58 * 781 + (3 + 781 + 1) + 3);
  // The table groups every layer's and every expert's copy of a tensor.
  EXPECT_EQ(t.at("model.layers.7.mlp.experts.17.gate_proj.weight").kind(),
            "model.layers.*.mlp.experts.*.gate_proj.weight");
  EXPECT_EQ(t.at("model.layers.61.mlp.experts.17.gate_proj.weight").kind(),
            "model.layers.61.mlp.experts.*.gate_proj.weight");
}

// GPT-OSS's sinks split with the heads and its router's learned bias; Qwen3's q/k norms;
// Grok-1's port's names; Mixtral keeps its own names; Qwen2-MoE's shared expert.
TEST(ReshardTensors, EachArchitecturesOwnTensors) {
  const auto oss = by_name(test::catalog_model("gpt-oss-120b"));
  expect_tensor(oss, "model.layers.0.self_attn.sinks", {64}, TpSplit::kRows);
  expect_tensor(oss, "model.layers.0.mlp.router.weight", {128, 2880}, TpSplit::kReplicated);
  expect_tensor(oss, "model.layers.0.mlp.router.bias", {128}, TpSplit::kReplicated);
  const auto qwen = by_name(test::catalog_model("qwen3-30b-a3b"));
  expect_tensor(qwen, "model.layers.0.self_attn.q_norm.weight", {128}, TpSplit::kReplicated);
  expect_tensor(qwen, "model.layers.0.mlp.experts.127.gate_proj.weight", {768, 2048},
                TpSplit::kRows);
  // Grok-1 as its Hugging Face port (hpcai-tech/grok-1) names it: attn, moe_block, each expert's
  // linear (gate), linear_v (up) and linear_1 (down), four norms a layer with a scale each.
  const auto grok = by_name(test::catalog_model("grok-1"));
  for (const char* norm : {"pre_attn_norm", "post_attn_norm", "pre_moe_norm", "post_moe_norm"}) {
    expect_tensor(grok, std::string("model.layers.0.") + norm + ".scale", {6144},
                  TpSplit::kReplicated);
  }
  expect_tensor(grok, "model.layers.0.attn.k_proj.weight", {1024, 6144}, TpSplit::kRows);
  expect_tensor(grok, "model.layers.63.moe_block.gate.weight", {8, 6144}, TpSplit::kReplicated);
  expect_tensor(grok, "model.layers.0.moe_block.experts.7.linear.weight", {32768, 6144},
                TpSplit::kRows);
  expect_tensor(grok, "model.layers.0.moe_block.experts.7.linear_v.weight", {32768, 6144},
                TpSplit::kRows);
  expect_tensor(grok, "model.layers.0.moe_block.experts.7.linear_1.weight", {6144, 32768},
                TpSplit::kColumns);
  expect_tensor(grok, "model.norm.scale", {6144}, TpSplit::kReplicated);
  EXPECT_EQ(grok.count("lm_head.weight"), 0u);  // tied to the embedding
  expect_tensor(by_name(test::catalog_model("mixtral-8x7b")),
                "model.layers.0.block_sparse_moe.experts.7.w2.weight", {4096, 14336},
                TpSplit::kColumns);
  // Qwen2-MoE: one shared expert, named in the singular, and its gate.
  const auto q15 = by_name(test::catalog_model("qwen1.5-moe-a2.7b"));
  expect_tensor(q15, "model.layers.0.mlp.shared_expert.gate_proj.weight", {5632, 2048},
                TpSplit::kRows);
  expect_tensor(q15, "model.layers.0.mlp.shared_expert_gate.weight", {1, 2048},
                TpSplit::kReplicated);
  expect_tensor(q15, "model.layers.23.mlp.experts.59.down_proj.weight", {2048, 1408},
                TpSplit::kColumns);
  expect_tensor(q15, "model.layers.0.self_attn.k_proj.bias", {2048}, TpSplit::kRows);
}

// GPT-OSS saves a layer's experts in four tensors, gate and up interleaved in one [128, 2880,
// 5760] and down in one [128, 2880, 2880] (each [in, out] per expert), with their biases: each
// expert's slice is listed on its own, expert TP splitting the ffn dimension.
TEST(ReshardTensors, GptOssFusedExperts) {
  const auto oss = by_name(test::catalog_model("gpt-oss-120b"));
  const std::string e = "model.layers.35.mlp.experts.";
  expect_tensor(oss, e + "gate_up_proj[127]", {2880, 2 * 2880}, TpSplit::kColumns);
  expect_tensor(oss, e + "gate_up_proj_bias[127]", {2 * 2880}, TpSplit::kRows);
  expect_tensor(oss, e + "down_proj[0]", {2880, 2880}, TpSplit::kRows);
  expect_tensor(oss, e + "down_proj_bias[0]", {2880}, TpSplit::kReplicated);
  EXPECT_EQ(oss.count(e + "gate_up_proj[128]"), 0u);
  EXPECT_EQ(oss.count(e + "0.gate_proj.weight"), 0u);
  EXPECT_EQ(oss.at(e + "down_proj[17]").expert, 17);
  EXPECT_EQ(oss.at(e + "down_proj[17]").kind(), "model.layers.*.mlp.experts.down_proj[*]");
  // A layer: 2 norms, q/k/v/o with biases (8), sinks, a router with its bias (2), 128 x 4.
  EXPECT_EQ(oss.size(), 36u * (2 + 8 + 1 + 2 + 128 * 4) + 3);
}

// The multimodal Llama 4 checkpoint keeps its language model under "language_model.": dense
// layers' MLP and MoE layers' router, fused experts and shared expert under "feed_forward."; the
// text-only class has no prefix.
TEST(ReshardTensors, Llama4AsItsCheckpointHoldsIt) {
  Model m = test::catalog_model("llama4-maverick");
  EXPECT_EQ(m.architecture, "Llama4ForConditionalGeneration");
  const auto t = by_name(m);
  const std::string l1 = "language_model.model.layers.1.feed_forward.";
  expect_tensor(t, "language_model.model.embed_tokens.weight", {202048, 5120}, TpSplit::kRows);
  expect_tensor(t, "language_model.model.layers.0.feed_forward.gate_proj.weight", {16384, 5120},
                TpSplit::kRows);
  expect_tensor(t, l1 + "router.weight", {128, 5120}, TpSplit::kReplicated);
  expect_tensor(t, l1 + "experts.gate_up_proj[127]", {5120, 2 * 8192}, TpSplit::kColumns);
  expect_tensor(t, l1 + "experts.down_proj[0]", {8192, 5120}, TpSplit::kRows);
  expect_tensor(t, l1 + "shared_expert.down_proj.weight", {5120, 8192}, TpSplit::kColumns);
  expect_tensor(t, "language_model.model.norm.weight", {5120}, TpSplit::kReplicated);
  expect_tensor(t, "language_model.lm_head.weight", {202048, 5120}, TpSplit::kRows);
  EXPECT_EQ(t.count(l1 + "experts.gate_up_proj_bias[0]"), 0u);
  m.architecture = "Llama4ForCausalLM";
  const auto text = by_name(m);
  expect_tensor(text, "model.layers.1.feed_forward.experts.down_proj[0]", {8192, 5120},
                TpSplit::kRows);
  expect_tensor(text, "lm_head.weight", {202048, 5120}, TpSplit::kRows);
}

// A Hugging Face config.json names its class, and a catalog file the same one: both give the
// same tensors, by name, shape and split.
TEST(ReshardTensors, ConfigAndCatalogNameTheSameTensors) {
  for (const char* name :
       {"llama3.1-8b", "mixtral-8x7b", "mixtral-8x22b", "deepseek-v3", "grok-1", "llama4-maverick",
        "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b", "qwen1.5-moe-a2.7b", "qwen2-57b-a14b",
        "deepseek-v2-lite", "deepseek-v2"}) {
    const Model hf = load_model(test::data_path(std::string("hf/") + name + "/config.json"));
    const Model cat = test::catalog_model(name);
    EXPECT_EQ(hf.architecture, cat.architecture) << name;
    const auto a = model_parameters(hf), b = model_parameters(cat);
    ASSERT_EQ(a.size(), b.size()) << name;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].name, b[i].name) << name;
      EXPECT_EQ(a[i].shape, b[i].shape) << a[i].name;
      EXPECT_EQ(a[i].split, b[i].split) << a[i].name;
    }
  }
}

// Sequence parallelism changes no tensor: an MoE checkpoint at TP 2 (trained with it, as
// Megatron-LM requires) is a valid layout, and its shards split as the table says.
TEST(ReshardTensors, MoeLayoutsWithTensorParallelism) {
  const Model ds = test::catalog_model("deepseek-v3");
  const Platform h100 = test::catalog_platform("h100-sxm-ndr");
  Plan base;
  base.partition = framework_partition_rule(Framework::kMegatron);
  const Plan p = parse_layout("tp=2,pp=4,dp=2", "--from", base);
  EXPECT_NO_THROW(validate_layout(p, ds, h100, "--from"));
  const LayoutShards l = shard_layout(ds, h100, p, layout_origin("--from"));
  for (std::size_t i = 0; i < l.params.size(); ++i) {
    if (l.params[i].name == "model.layers.0.self_attn.q_b_proj.weight") {
      EXPECT_EQ(l.placed[i].shards[1].shape, (std::vector<std::int64_t>{12288, 1536}));
    }
    // The embedding's table is also held by the stage of the multi-token-prediction module.
    if (l.params[i].name == "model.embed_tokens.weight") {
      EXPECT_EQ(l.placed[i].stages, (std::vector<std::int64_t>{0, 3}));
    }
  }
}

}  // namespace
}  // namespace trainsim
