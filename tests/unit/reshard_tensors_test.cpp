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
  EXPECT_EQ(models, 18);
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
// Grok-1's four norms under its names; Llama 4's dense layers between MoE layers with a shared
// expert; Mixtral keeps its own names.
TEST(ReshardTensors, EachArchitecturesOwnTensors) {
  const auto oss = by_name(test::catalog_model("gpt-oss-120b"));
  expect_tensor(oss, "model.layers.0.self_attn.sinks", {64}, TpSplit::kRows);
  expect_tensor(oss, "model.layers.0.mlp.gate.bias", {128}, TpSplit::kReplicated);
  expect_tensor(oss, "model.layers.0.mlp.experts.0.down_proj.bias", {2880}, TpSplit::kReplicated);
  const auto qwen = by_name(test::catalog_model("qwen3-30b-a3b"));
  expect_tensor(qwen, "model.layers.0.self_attn.q_norm.weight", {128}, TpSplit::kReplicated);
  expect_tensor(qwen, "model.layers.0.mlp.experts.127.gate_proj.weight", {768, 2048},
                TpSplit::kRows);
  const auto grok = by_name(test::catalog_model("grok-1"));
  for (const char* norm : {"pre_attn_norm", "post_attn_norm", "pre_moe_norm", "post_moe_norm"}) {
    expect_tensor(grok, std::string("model.layers.0.") + norm + ".weight", {6144},
                  TpSplit::kReplicated);
  }
  const auto llama4 = by_name(test::catalog_model("llama4-maverick"));
  expect_tensor(llama4, "model.layers.0.mlp.gate_proj.weight", {16384, 5120}, TpSplit::kRows);
  expect_tensor(llama4, "model.layers.1.mlp.shared_experts.gate_proj.weight", {8192, 5120},
                TpSplit::kRows);
  expect_tensor(by_name(test::catalog_model("mixtral-8x7b")),
                "model.layers.0.block_sparse_moe.experts.7.w2.weight", {4096, 14336},
                TpSplit::kColumns);
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
