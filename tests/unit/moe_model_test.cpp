// The mixture-of-experts architectures in the cost model, in closed form: DeepSeek's multi-head
// latent attention (its GEMMs on a TP rank), the shared expert beside the routed ones (and
// Qwen2-MoE's gate on it), and a
// model whose dense and MoE layers differ (Llama 4's interleaving, DeepSeek's leading dense
// layers) costed and counted layer by layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/cost/stage_cost.hpp"
#include "sim/memory/memory.hpp"
#include "sim/model/params.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

Plan moe_plan(std::int64_t tp, std::int64_t pp, std::int64_t dp, std::int64_t ep) {
  Plan p;
  p.tp = tp;
  p.sp = tp > 1;
  p.pp = pp;
  p.dp = dp;
  p.ep = ep;
  p.etp = 1;
  p.gbs = dp * 8;
  p.seq_len = 4096;
  return p;
}

const KernelSpec& kernel(const BlockPass& pass, const std::string& name) {
  const auto it = std::find_if(pass.kernels.begin(), pass.kernels.end(),
                               [&](const KernelSpec& k) { return k.name == name; });
  EXPECT_NE(it, pass.kernels.end()) << name;
  return *it;
}

GemmShape gemm_of(const BlockPass& pass, const std::string& name) {
  return std::get<GemmShape>(kernel(pass, name).shape);
}

// DeepSeek-V3 at TP 2 (64 heads per rank), 4096 tokens: q_down 7168 -> 1536 and kv_down
// 7168 -> 512 + 64 whole on the rank, q_up 1536 -> 64 x 192, kv_up 512 -> 64 x (128 + 128),
// attention over head dim 192, the output projection from 64 x 128.
TEST(MoeModel, MlaGemmsOnATpRank) {
  const Model m = test::catalog_model("deepseek-v3");
  const LayerShape s = layer_shape(m, moe_plan(2, 1, 32, 64), 129280);
  const BlockPass fwd = block_pass(BlockKind::kDecoder, false, s);
  const auto expect = [&](const char* name, std::int64_t mm, std::int64_t n, std::int64_t k) {
    const GemmShape g = gemm_of(fwd, name);
    EXPECT_EQ(g.m, mm) << name;
    EXPECT_EQ(g.n, n) << name;
    EXPECT_EQ(g.k, k) << name;
  };
  expect("q_down", 4096, 1536, 7168);
  expect("q_up", 4096, 64 * 192, 1536);
  expect("kv_down", 4096, 512 + 64, 7168);
  expect("kv_up", 4096, 64 * 256, 512);
  expect("out_proj", 4096, 7168, 64 * 128);
  const auto& a = std::get<AttentionShape>(kernel(fwd, "attention").shape);
  EXPECT_EQ(a.head_dim, 192);
  EXPECT_EQ(a.heads, 64);
  // No fused QKV projection in MLA.
  EXPECT_TRUE(std::none_of(fwd.kernels.begin(), fwd.kernels.end(),
                           [](const KernelSpec& k) { return k.name == "qkv_proj"; }));
}

// Qwen3's QK-norm at TP 2 (16 query heads and 2 KV heads of 128 per rank), 4096 tokens: an
// RMSNorm over each head of the queries and of the keys between the QKV projection and RoPE,
// one row per token and head, and its gradient; each layer keeps Q and K before the norm too.
TEST(MoeModel, QkNormPerHeadBeforeRope) {
  const Model m = test::catalog_model("qwen3-30b-a3b");
  ASSERT_TRUE(m.qk_norm);
  const Plan plan = moe_plan(2, 1, 8, 8);
  const LayerShape s = layer_shape(m, plan, 151936, true);
  const BlockPass fwd = block_pass(BlockKind::kDecoder, false, s);
  const BlockPass bwd = block_pass(BlockKind::kDecoder, true, s);
  EXPECT_EQ(kernel(fwd, "q_layernorm").shape,
            (KernelShape{MemoryShape{"rmsnorm", 4096 * 16, 128}}));
  EXPECT_EQ(kernel(fwd, "k_layernorm").shape, (KernelShape{MemoryShape{"rmsnorm", 4096 * 2, 128}}));
  EXPECT_EQ(kernel(bwd, "q_layernorm.grad").shape,
            (KernelShape{MemoryShape{"rmsnorm.grad", 4096 * 16, 128}}));
  EXPECT_EQ(kernel(bwd, "k_layernorm.grad").shape,
            (KernelShape{MemoryShape{"rmsnorm.grad", 4096 * 2, 128}}));
  const auto at = [&](const BlockPass& p, const std::string& name) {
    return std::find_if(p.kernels.begin(), p.kernels.end(),
                        [&](const KernelSpec& k) { return k.name == name; }) -
           p.kernels.begin();
  };
  EXPECT_LT(at(fwd, "qkv_proj"), at(fwd, "q_layernorm"));
  EXPECT_LT(at(fwd, "k_layernorm"), at(fwd, "rope"));
  Model without = m;
  without.qk_norm = false;
  const BlockPass plain =
      block_pass(BlockKind::kDecoder, false, layer_shape(without, plan, 151936, true));
  EXPECT_EQ(fwd.kernels.size(), plain.kernels.size() + 2);
  const double saved =
      layer_activations(m, plan, true).saved - layer_activations(without, plan, true).saved;
  EXPECT_DOUBLE_EQ(saved, 2.0 * 4096 * (32 * 128 + 4 * 128) / 2);
}

// Grok-1's sandwich norms at TP 4 with SP: an RMSNorm on the attention output and one on the MLP
// output, before each residual add, on the GPU's 4096 / 4 tokens of 6144, and their gradients;
// each layer keeps their inputs too.
TEST(MoeModel, SandwichNormsOnTheAttentionAndMlpOutputs) {
  const Model m = test::catalog_model("grok-1");
  ASSERT_TRUE(m.sandwich_norms);
  Plan plan = moe_plan(4, 1, 2, 2);
  plan.etp = 4;
  const LayerShape s = layer_shape(m, plan, 131072, true);
  const BlockPass fwd = block_pass(BlockKind::kDecoder, false, s);
  const BlockPass bwd = block_pass(BlockKind::kDecoder, true, s);
  const KernelShape rows{MemoryShape{"rmsnorm", 1024, 6144}};
  EXPECT_EQ(kernel(fwd, "attention_output_norm").shape, rows);
  EXPECT_EQ(kernel(fwd, "mlp_output_norm").shape, rows);
  const KernelShape grad{MemoryShape{"rmsnorm.grad", 1024, 6144}};
  EXPECT_EQ(kernel(bwd, "attention_output_norm.grad").shape, grad);
  EXPECT_EQ(kernel(bwd, "mlp_output_norm.grad").shape, grad);
  Model without = m;
  without.sandwich_norms = false;
  const LayerShape plain = layer_shape(without, plan, 131072, true);
  EXPECT_EQ(fwd.kernels.size(), block_pass(BlockKind::kDecoder, false, plain).kernels.size() + 2);
  EXPECT_EQ(bwd.kernels.size(), block_pass(BlockKind::kDecoder, true, plain).kernels.size() + 2);
  const double saved =
      layer_activations(m, plan, true).saved - layer_activations(without, plan, true).saved;
  EXPECT_DOUBLE_EQ(saved, 2.0 * 2 * 4096 * 6144 / 4);
}

// FP8 grouped GEMMs take each expert's rows in multiples of 16. Mixtral 8x7B at EP 8, one expert
// per GPU: balanced, its 4096 x 2 rows are aligned and nothing is copied; skewed, the counts
// differ and the routed rows are copied into a padded buffer before the experts and out after
// them (and back in the backward), rows x 4096 each; BF16 GEMMs need no padding.
TEST(MoeModel, Fp8ExpertRowsPaddedWhereUnaligned) {
  const Model m = test::catalog_model("mixtral-8x7b");
  const auto names = [&](double imbalance, Precision precision) {
    Plan plan = moe_plan(1, 1, 8, 8);
    plan.moe_imbalance = imbalance;
    plan.precision = precision;
    const LayerShape s = layer_shape(m, plan, 32000, true);
    std::vector<std::string> out;
    for (bool backward : {false, true}) {
      for (const auto& k : block_pass(BlockKind::kDecoder, backward, s).kernels) {
        if (k.name.rfind("expert_pad", 0) == 0 || k.name.rfind("expert_unpad", 0) == 0) {
          EXPECT_EQ(k.shape,
                    (KernelShape{MemoryShape{"copy", std::llround(routed_expert_rows(s)), 4096}}))
              << k.name;
          out.push_back(k.name);
        }
      }
    }
    return out;
  };
  EXPECT_TRUE(names(1.0, Precision::kFP8).empty());
  EXPECT_EQ(names(1.5, Precision::kFP8),
            (std::vector<std::string>{"expert_pad", "expert_unpad", "expert_unpad.grad",
                                      "expert_pad.grad"}));
  EXPECT_TRUE(names(1.5, Precision::kBF16).empty());
}

// The shared expert is a dense gated MLP over all 4096 tokens, split over TP: up 7168 ->
// 2 x 2048 / 2, down 1024 -> 7168; with SP its input gathered and output reduce-scattered over
// TP, 4096 x 7168 x 2 bytes each way, beside the attention's and the experts' calls.
TEST(MoeModel, SharedExpertIsATensorParallelMlp) {
  const Model m = test::catalog_model("deepseek-v3");
  const LayerShape s = layer_shape(m, moe_plan(2, 1, 32, 64), 129280);
  const BlockPass fwd = block_pass(BlockKind::kDecoder, false, s);
  const GemmShape up = gemm_of(fwd, "shared_up");
  EXPECT_EQ(up.m, 4096);
  EXPECT_EQ(up.n, 2 * 2048 / 2);
  EXPECT_EQ(up.k, 7168);
  const GemmShape down = gemm_of(fwd, "shared_down");
  EXPECT_EQ(down.k, 1024);
  EXPECT_EQ(down.n, 7168);
  const double bytes = 4096.0 * 7168 * 2;
  // The attention's gather and scatter, and the shared expert's.
  EXPECT_DOUBLE_EQ(collective_load(fwd.collectives, CollectiveKind::kAllGather, Dim::kTP).bytes,
                   2 * bytes);
  EXPECT_DOUBLE_EQ(collective_load(fwd.collectives, CollectiveKind::kReduceScatter, Dim::kTP).bytes,
                   2 * bytes);
}

// Qwen2-MoE's gate on the shared expert (Qwen1.5-MoE-A2.7B at TP 2 with SP, 4096 tokens): a
// GEMV of the GPU's 2048 tokens by the [1, 2048] weight and the output scaled by it, forward;
// backward, the scaling's gradient and the GEMV's two. The layer keeps the shared expert's
// output for the gate's gradient: 2048 x 2048 x 2 bytes more than without the gate, and the
// gate's 2048 parameters are replicated on every rank.
TEST(MoeModel, SharedExpertGateScalesItsOutput) {
  const Model gated = test::catalog_model("qwen1.5-moe-a2.7b");
  ASSERT_TRUE(gated.moe.shared_expert_gate);
  Model plain = gated;
  plain.moe.shared_expert_gate = false;
  const Plan plan = moe_plan(2, 1, 4, 4);
  const LayerShape s = layer_shape(gated, plan, 151936);
  const BlockPass fwd = block_pass(BlockKind::kDecoder, false, s);
  const BlockPass bwd = block_pass(BlockKind::kDecoder, true, s);
  const GemmShape gemv = gemm_of(fwd, "shared_gate");
  EXPECT_EQ(gemv.m, 2048);
  EXPECT_EQ(gemv.n, 1);
  EXPECT_EQ(gemv.k, 2048);
  EXPECT_EQ(kernel(fwd, "shared_gate.scale").shape,
            (KernelShape{MemoryShape{"gate_scale", 2048, 2048}}));
  EXPECT_EQ(kernel(bwd, "shared_gate.scale.grad").shape,
            (KernelShape{MemoryShape{"gate_scale.grad", 2048, 2048}}));
  // The input's gradient: the gate's (2048 tokens x 1) times the weight; the weight's: over the
  // 2048 tokens, 1 output.
  const GemmShape dgrad = gemm_of(bwd, "shared_gate.dgrad"),
                  wgrad = gemm_of(bwd, "shared_gate.wgrad");
  EXPECT_EQ(dgrad.k, 1);
  EXPECT_EQ(dgrad.n, 2048);
  EXPECT_EQ(wgrad.k, 2048);
  EXPECT_EQ(wgrad.n, 1);
  const LayerShape p = layer_shape(plain, plan, 151936);
  EXPECT_EQ(block_pass(BlockKind::kDecoder, false, p).kernels.size() + 2, fwd.kernels.size());
  EXPECT_EQ(block_pass(BlockKind::kDecoder, true, p).kernels.size() + 3, bwd.kernels.size());
  EXPECT_DOUBLE_EQ(
      layer_activations(gated, plan, true).saved - layer_activations(plain, plan, true).saved,
      2048.0 * 2048 * 2);
  EXPECT_EQ(layer_params_per_rank(gated, plan, true) - layer_params_per_rank(plain, plan, true),
            2048);
}

// Llama 4 Maverick on 2 stages: each holds 24 layers, 12 dense (MLP 16384) and 12 MoE (128
// experts of 8192 and a shared expert); its parameters are the sum of the two kinds, and its
// forward pass has a dense MLP 12 times and the experts 12 times.
TEST(MoeModel, DenseAndMoeLayersCostedByKind) {
  const Model m = test::catalog_model("llama4-maverick");
  const Plan plan = moe_plan(1, 2, 8, 8);
  const CostModel cm =
      compute_costs(m, test::catalog_platform("h100-sxm-ndr"), plan, test::uniform_partition(m, 2));
  const ParamCount pc = count_params(m);
  EXPECT_EQ(cm.stages[1].params,
            12 * pc.layer(false) + 12 * pc.layer(true) + pc.final_norm + pc.lm_head);
  const auto count = [&](const char* name) {
    std::int64_t n = 0;
    for (const auto& k : cm.stages[1].forward.kernels) n += k.name == name ? k.count : 0;
    return n;
  };
  EXPECT_EQ(count("decoder.mlp_up"), 12);
  EXPECT_EQ(count("decoder.expert_up"), 12);
  EXPECT_EQ(count("decoder.shared_up"), 12);
  EXPECT_EQ(count("decoder.qkv_proj"), 24);
  // Per GPU: a dense layer whole (TP 1), an MoE layer with 128 / 8 of its experts.
  const std::int64_t expert = 3 * 5120 * 8192;
  EXPECT_EQ(layer_params_per_rank(m, plan, true) - layer_params_per_rank(m, plan, false),
            16 * expert + 3 * 5120 * 8192 + 128 * 5120 - 3 * 5120 * 16384);
  EXPECT_EQ(cm.stages[1].expert_params_per_gpu, 12 * 16 * expert);
}

// DeepSeek-V3's first three layers are dense: on 8 stages of the balanced rule the first stage
// holds them, and its activations per micro-batch are smaller than a stage of MoE layers only.
TEST(MoeModel, LeadingDenseLayersHoldDenseActivations) {
  const Model m = test::catalog_model("deepseek-v3");
  const Plan plan = moe_plan(2, 8, 32, 64);
  const LayerActivations dense = layer_activations(m, plan, false);
  const LayerActivations moe = layer_activations(m, plan, true);
  // A dense layer keeps 3 x 18432 / 2 MLP elements per token; an MoE layer, of the GPU's 4096 / 2
  // tokens (SP), 8 routed rows each of 7168 inputs and 3 x 2048 up outputs and activations, and
  // the shared expert's 3 x 2048 / 2 per token.
  const double T = 4096, e = 2;
  const double routed = e * T / 2 * 8 * (7168 + 3 * 2048);
  EXPECT_NEAR(moe.saved - dense.saved, routed + e * T * 3 * 2048 / 2.0 - e * T * 3 * 18432 / 2.0,
              1.0);
}

// The experts weight their activation's output by the router's probabilities. After SwiGLU
// Megatron-Core's fused weighted kernel keeps its input and the weighted output only; after a
// plain activation (GeLU, Megatron-LM CI's MoE runs) no fused kernel exists and the unweighted
// output is kept too, as the multiplication's input. Mixtral 8x7B at EP 8, TP 1, 4096 tokens
// each routed to 2 experts: 8192 rows of 4096 inputs on a GPU, and 14336 wide.
TEST(MoeModel, PlainExpertActivationKeepsItsUnweightedOutput) {
  const Model gated = test::catalog_model("mixtral-8x7b");
  ASSERT_EQ(gated.ffn_kind, FfnKind::kSwiGLU);
  Model plain = gated;
  plain.ffn_kind = FfnKind::kGelu;
  Plan plan = moe_plan(1, 1, 8, 8);
  const double rows = 4096.0 * 2, h = 4096, f = 14336;
  const LayerActivations a = layer_activations(gated, plan, true);
  const LayerActivations b = layer_activations(plain, plan, true);
  // SwiGLU: 2f up outputs and f weighted outputs; GeLU: f up outputs, f activation outputs and f
  // weighted outputs. The same bytes either way; the rest of the layer is the same too.
  EXPECT_DOUBLE_EQ(a.saved, b.saved);
  const LayerActivations dense = layer_activations(gated, plan, false);
  EXPECT_NEAR(a.saved - dense.saved, 2.0 * (rows * (h + 3 * f) - 4096 * 3 * f), 1.0);
  // Recomputing moe_act drops what the weighted activation keeps beyond its input: f per row
  // after SwiGLU, 2f after GeLU.
  plan.recompute = Recompute::kSelective;
  plan.recompute_modules = kRecomputeMoeAct;
  EXPECT_DOUBLE_EQ(layer_activations(gated, plan, true).recompute, 2.0 * rows * f);
  EXPECT_DOUBLE_EQ(layer_activations(plain, plan, true).recompute, 2.0 * rows * 2 * f);
}

// --overlap-moe-expert-parallel-comm: the expert all-to-alls (dispatch and combine, 2 calls of
// the routed tokens' hidden states) run beside the layer's GEMMs and attention on their own
// stream, and the pass waits only for what outlasts them (bulk overlap: max(0, a2a - compute)).
// Mixtral 8x7B at EP 8 on one node: the all-to-alls are shorter than the compute, so the pass
// costs its kernels alone and the exposed EP time disappears.
TEST(MoeModel, ExpertAllToAllBesideTheLayersCompute) {
  const Model m = test::catalog_model("mixtral-8x7b");
  Plan plan = moe_plan(1, 1, 8, 8);
  plan.etp = 0;
  plan.moe_a2a_overlap = true;
  const LayerShape s = layer_shape(m, plan, 32000);
  for (const bool backward : {false, true}) {
    const BlockPass pass = block_pass(BlockKind::kDecoder, backward, s);
    const CollectiveLoad a2a =
        collective_load(pass.collectives, CollectiveKind::kAllToAll, Dim::kEP);
    EXPECT_EQ(a2a.count, 2);
    EXPECT_DOUBLE_EQ(a2a.bytes, 2.0 * 4096 * 2 * 4096 * 2);  // both ways, top-2, BF16
    ASSERT_EQ(pass.overlaps.size(), 1u);
    EXPECT_EQ(pass.overlaps[0].dim, Dim::kEP);
    EXPECT_EQ(pass.overlaps[0].method, OverlapMethod::kBulk);
    const auto& names = pass.overlaps[0].kernels;
    EXPECT_NE(std::find(names.begin(), names.end(), backward ? "expert_up.wgrad" : "expert_up"),
              names.end());
    EXPECT_NE(std::find(names.begin(), names.end(), backward ? "attention.grad" : "attention"),
              names.end());
  }
  const Platform pf = test::catalog_platform("h100-sxm-ndr");
  const CostModel on = compute_costs(m, pf, plan, test::uniform_partition(m, 1));
  double kernels = 0;
  for (const auto& k : on.stages[0].forward.kernels) kernels += k.time.seconds * k.count;
  EXPECT_NEAR(on.stages[0].forward.seconds, kernels, 1e-12);  // the a2a hides entirely
  const auto& calls = on.stages[0].forward.collectives;
  const auto a2a = std::find_if(calls.begin(), calls.end(), [](const CollectiveLoad& c) {
    return c.kind == CollectiveKind::kAllToAll && c.dim == Dim::kEP;
  });
  ASSERT_NE(a2a, calls.end());
  EXPECT_TRUE(a2a->alongside);
}

}  // namespace
}  // namespace trainsim
