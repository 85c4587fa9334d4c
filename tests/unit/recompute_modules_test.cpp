// Megatron-Core's --recompute-modules under --recompute selective: the names, the rules, which
// forward kernels each module runs again before the backward (the dense MLP on dense layers only,
// the MoE MLP with its all-to-alls on MoE layers only) and what each drops from the activations
// kept between forward and backward, in closed forms.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "sim/cost/stage_cost.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/recompute_modules.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

TEST(RecomputeModules, NamesRoundTrip) {
  EXPECT_EQ(parse_recompute_modules("core_attn"), kRecomputeCoreAttn);
  const auto both = parse_recompute_modules("mlp,mla_up_proj");
  ASSERT_TRUE(both);
  EXPECT_EQ(*both, kRecomputeMlp | kRecomputeMlaUpProj);
  EXPECT_EQ(recompute_modules_text(*both), "mla_up_proj,mlp");  // Megatron's order
  for (const char* bad : {"", "core_attn,", ",mlp", "mlp,mlp", "attention", "mlp;moe"}) {
    EXPECT_FALSE(parse_recompute_modules(bad)) << bad;
  }
  EXPECT_EQ(recompute_module_names(),
            "core_attn, layernorm, mla_up_proj, mlp, moe, moe_act, shared_experts");
}

Plan selective(std::uint32_t modules) {
  Plan p;
  p.tp = 2;
  p.sp = true;
  p.dp = 8;
  p.ep = 8;
  p.etp = 1;
  p.gbs = 8;
  p.seq_len = 4096;
  p.recompute = Recompute::kSelective;
  p.recompute_modules = modules;
  return p;
}

TEST(RecomputeModules, MegatronRules) {
  const Model ds = test::catalog_model("deepseek-v3");
  EXPECT_EQ(test::plan_error(selective(kRecomputeMlaUpProj | kRecomputeMlp), ds), "(valid)");
  Plan none = selective(kRecomputeMlp);
  none.recompute = Recompute::kNone;
  EXPECT_EQ(test::plan_error(none, ds),
            "--recompute-modules: needs --recompute selective (got none)");
  Plan dense = selective(kRecomputeMlaUpProj);
  dense.ep = 1;
  EXPECT_EQ(test::plan_error(dense, test::catalog_model("llama3.1-8b")),
            "--recompute-modules: mla_up_proj needs a model with multi-head latent attention "
            "(Megatron-Core's rule)");
}

// DeepSeek-V3 cut to 4 layers (3 dense, 1 MoE) on one stage: the recompute pass's kernels by
// name, and its collectives.
struct Recomputed {
  std::set<std::string> kernels;
  std::int64_t ep_calls = 0;
  std::int64_t ep_forward_calls = 0;
};

Recomputed recomputed_by(std::uint32_t modules) {
  Model m = test::catalog_model("deepseek-v3");
  m.num_layers = 4;
  m.mtp_layers = 0;
  const Plan plan = selective(modules);
  const CostModel c =
      compute_costs(m, test::catalog_platform("h100-sxm-ndr"), plan, test::uniform_partition(m, 1));
  Recomputed r;
  for (const auto& k : c.stages[0].recompute.kernels) {
    r.kernels.insert(k.name);
  }
  for (const auto& x : c.stages[0].recompute.collectives) {
    if (x.dim == Dim::kEP) r.ep_calls += x.count;
  }
  for (const auto& x : c.stages[0].forward.collectives) {
    if (x.dim == Dim::kEP) r.ep_forward_calls += x.count;
  }
  return r;
}

TEST(RecomputeModules, KernelsEachModuleRunsAgain) {
  using Names = std::set<std::string>;
  EXPECT_EQ(recomputed_by(kRecomputeCoreAttn).kernels, (Names{"decoder.attention"}));
  EXPECT_EQ(recomputed_by(kRecomputeLayernorm).kernels,
            (Names{"decoder.input_norm", "decoder.post_attention_norm"}));
  EXPECT_EQ(recomputed_by(kRecomputeMlaUpProj).kernels,
            (Names{"decoder.q_up", "decoder.kv_up", "decoder.rope"}));
  // The dense MLP on the three dense layers only: the MoE layer's MLP is not "mlp".
  EXPECT_EQ(recomputed_by(kRecomputeMlp).kernels,
            (Names{"decoder.mlp_up", "decoder.activation", "decoder.mlp_down"}));
  EXPECT_EQ(recomputed_by(kRecomputeMoeAct).kernels, (Names{"decoder.expert_activation"}));
  EXPECT_EQ(recomputed_by(kRecomputeSharedExperts).kernels,
            (Names{"decoder.shared_up", "decoder.shared_activation", "decoder.shared_down"}));
  const Recomputed moe = recomputed_by(kRecomputeMoe);
  EXPECT_EQ(moe.kernels,
            (Names{"decoder.router", "decoder.router.topk", "decoder.permute", "decoder.expert_up",
                   "decoder.expert_activation", "decoder.expert_down", "decoder.unpermute",
                   "decoder.shared_up", "decoder.shared_activation", "decoder.shared_down"}));
  // Its dispatch and combine run again: the forward's expert all-to-alls once more.
  EXPECT_GT(moe.ep_forward_calls, 0);
  EXPECT_EQ(moe.ep_calls, moe.ep_forward_calls);
  EXPECT_EQ(recomputed_by(kRecomputeMoeAct).ep_calls, 0);
  // A recomputed dense MLP gathers its input and reduce-scatters its output again (TP 2 with
  // SP): once per dense layer, the three of them; the attention core needs no collective.
  const auto tp_calls = [](std::uint32_t modules) {
    Model m = test::catalog_model("deepseek-v3");
    m.num_layers = 4;
    m.mtp_layers = 0;
    const Plan plan = selective(modules);
    const CostModel c = compute_costs(m, test::catalog_platform("h100-sxm-ndr"), plan,
                                      test::uniform_partition(m, 1));
    std::vector<CollectiveLoad> out;
    for (const auto& x : c.stages[0].recompute.collectives) {
      if (x.dim == Dim::kTP) out.push_back(x);
    }
    return out;
  };
  const auto mlp = tp_calls(kRecomputeMlp);
  ASSERT_EQ(mlp.size(), 2u);
  EXPECT_EQ(mlp[0].kind, CollectiveKind::kAllGather);
  EXPECT_EQ(mlp[0].count, 3);
  EXPECT_DOUBLE_EQ(mlp[0].bytes, 3 * 4096.0 * 7168 * 2);
  EXPECT_EQ(mlp[1].kind, CollectiveKind::kReduceScatter);
  EXPECT_EQ(mlp[1].count, 3);
  EXPECT_TRUE(tp_calls(kRecomputeCoreAttn).empty());
}

// A recomputed MoE MLP's TP collectives, on the MoE layer of the same cut (TP 2 with SP): its
// shared expert gathers its input and reduce-scatters its output again, T x h each; with expert
// TP 2 its routed tokens too, the GPU's T / tp tokens x top-8 x etp rows.
TEST(RecomputeModules, MoeMlpTensorParallelCollectivesRunAgain) {
  const double T = 4096, h = 7168, bf16 = 2, topk = 8;
  const auto tp_calls = [](std::uint32_t modules, std::int64_t etp) {
    Model m = test::catalog_model("deepseek-v3");
    m.num_layers = 4;
    m.mtp_layers = 0;
    Plan plan = selective(modules);
    plan.etp = etp;
    const CostModel c = compute_costs(m, test::catalog_platform("h100-sxm-ndr"), plan,
                                      test::uniform_partition(m, 1));
    std::map<CollectiveKind, CollectiveLoad> out;
    for (const auto& x : c.stages[0].recompute.collectives) {
      if (x.dim == Dim::kTP) out[x.kind] = x;
    }
    return out;
  };
  for (const auto modules : {kRecomputeSharedExperts, kRecomputeMoe}) {
    const auto shared = tp_calls(modules, 1);
    ASSERT_EQ(shared.size(), 2u) << modules;
    EXPECT_EQ(shared.at(CollectiveKind::kAllGather).count, 1);
    EXPECT_DOUBLE_EQ(shared.at(CollectiveKind::kAllGather).bytes, T * h * bf16);
    EXPECT_DOUBLE_EQ(shared.at(CollectiveKind::kReduceScatter).bytes, T * h * bf16);
  }
  const auto etp2 = tp_calls(kRecomputeMoe, 2);
  const double routed = T / 2 * topk * 2 * h * bf16;
  EXPECT_EQ(etp2.at(CollectiveKind::kAllGather).count, 2);
  EXPECT_DOUBLE_EQ(etp2.at(CollectiveKind::kAllGather).bytes, T * h * bf16 + routed);
  EXPECT_DOUBLE_EQ(etp2.at(CollectiveKind::kReduceScatter).bytes, T * h * bf16 + routed);
  // The shared expert alone gathers only its own tokens; the expert activation none.
  EXPECT_DOUBLE_EQ(tp_calls(kRecomputeSharedExperts, 2).at(CollectiveKind::kAllGather).bytes,
                   T * h * bf16);
  EXPECT_TRUE(tp_calls(kRecomputeMoeAct, 2).empty());
}

// What each module drops, per layer, against the same layer without recomputation: a dense
// layer's MLP its up output and activation, split over TP; MLA's up-projections their Q, K and V
// per head; the norms their two outputs, split by SP.
TEST(RecomputeModules, ActivationsEachModuleDrops) {
  const Model ds = test::catalog_model("deepseek-v3");
  const double T = 4096, h = 7168, t = 2;
  Plan off = selective(kRecomputeCoreAttn);
  off.recompute = Recompute::kNone;
  const auto dropped = [&](std::uint32_t modules, bool moe) {
    const LayerActivations none = layer_activations(ds, off, moe);
    const LayerActivations a = layer_activations(ds, selective(modules), moe);
    EXPECT_DOUBLE_EQ(a.saved + a.recompute, none.saved);
    return a.recompute;
  };
  EXPECT_DOUBLE_EQ(dropped(kRecomputeMlp, false), 2.0 * T * (2 + 1) * 18432 / t);
  EXPECT_DOUBLE_EQ(dropped(kRecomputeMlp, true), 0.0);
  EXPECT_DOUBLE_EQ(dropped(kRecomputeLayernorm, false), 2.0 * 2.0 * T * h / t);
  EXPECT_DOUBLE_EQ(dropped(kRecomputeMlaUpProj, false),
                   2.0 * T * (2 * 128 * 192 + 128 * (128 + 128)) / t);
  EXPECT_DOUBLE_EQ(dropped(kRecomputeSharedExperts, true), 2.0 * T * (2 + 1) * 2048 / t);
  EXPECT_DOUBLE_EQ(dropped(kRecomputeCoreAttn, false), 4.0 * T * 128 / t);  // flash's statistics
  EXPECT_GT(dropped(kRecomputeMoe, true),
            dropped(kRecomputeMoeAct, true) + dropped(kRecomputeSharedExperts, true));
}

}  // namespace
}  // namespace trainsim
