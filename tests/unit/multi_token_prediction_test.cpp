// Multi-token prediction (DeepSeek-V3, Megatron-Core's --mtp-num-layers): which plans build the
// modules, what a module adds to its stage (parameters, kernels, the LM head and loss once more,
// the hidden states it hands on) and to its stage's memory, in closed forms against the same plan
// without it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/cost/layer_ops.hpp"
#include "sim/cost/stage_cost.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"
#include "sim/model/params.hpp"
#include "sim/plan/vocab.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// DeepSeek-V3 cut to 8 layers (3 dense, 5 MoE) on 2 stages of TP 2, EP 8.
Model short_deepseek() {
  Model m = test::catalog_model("deepseek-v3");
  m.num_layers = 8;
  return m;
}

Plan mtp_plan() {
  Plan p;
  p.tp = 2;
  p.sp = true;
  p.pp = 2;
  p.dp = 8;
  p.ep = 8;
  p.etp = 1;
  p.mbs = 1;
  p.gbs = 64;
  p.seq_len = 4096;
  return p;
}

std::int64_t count_of(const PassCost& pass, const std::string& name) {
  std::int64_t n = 0;
  for (const auto& k : pass.kernels) n += k.name == name ? k.count : 0;
  return n;
}

TEST(MultiTokenPrediction, WhichPlansBuildTheModules) {
  const Model ds = test::catalog_model("deepseek-v3");
  Plan plan = mtp_plan();
  EXPECT_EQ(trained_model(ds, plan).mtp_layers, 1);  // the model's own, under Megatron
  plan.mtp_num_layers = 0;
  EXPECT_EQ(trained_model(ds, plan).mtp_layers, 0);
  plan.mtp_num_layers = 3;
  EXPECT_EQ(trained_model(ds, plan).mtp_layers, 3);
  // nanotron and DeepSpeed build none; asked for, the plan is refused.
  Plan nanotron = mtp_plan();
  nanotron.partition = "nanotron";
  EXPECT_EQ(trained_model(ds, nanotron).mtp_layers, 0);
  nanotron.mtp_num_layers = 1;
  EXPECT_EQ(test::plan_error(nanotron, trained_model(ds, nanotron)),
            "--mtp-num-layers: multi-token prediction is Megatron-Core's; nanotron builds none "
            "(use 0)");
}

// The last stage with the module against the same stage without it: one MoE decoder layer on
// 1/ep of the experts, the projection of 2h to h split over TP and three norms, and (away from
// the embedding's stage) a copy of the embedding; its kernels, and the LM head and loss twice.
TEST(MultiTokenPrediction, WhatTheModuleAddsToItsStage) {
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  const Plan plan = mtp_plan();
  Model with = short_deepseek();
  Model without = with;
  without.mtp_layers = 0;
  const Partition p_with = megatron_uniform_partition(with, plan, {});
  const Partition p_without = megatron_uniform_partition(without, plan, {});
  EXPECT_EQ(p_with.megatron_layout(), "Et*4|t*4mL");
  const CostModel c_with = compute_costs(with, platform, plan, p_with);
  const CostModel c_without = compute_costs(without, platform, plan, p_without);
  const StageCost& a = c_with.stages[1];
  const StageCost& b = c_without.stages[1];
  const std::int64_t h = 7168;
  const std::int64_t rows = padded_vocab(with.vocab_size, plan.vocab_multiple(), plan.tp) / 2;
  EXPECT_EQ(a.params - b.params, mtp_module_params(with));
  EXPECT_EQ(a.params_per_gpu - b.params_per_gpu,
            layer_params_per_rank(with, plan, true) + 2 * h * h / 2 + 3 * h + rows * h);
  EXPECT_EQ(a.expert_params_per_gpu - b.expert_params_per_gpu, expert_params_per_rank(with, plan));
  EXPECT_EQ(count_of(a.forward, "lm_head.lm_head"), 2);
  EXPECT_EQ(count_of(b.forward, "lm_head.lm_head"), 1);
  EXPECT_EQ(count_of(a.forward, "loss.cross_entropy"), 2);
  EXPECT_EQ(count_of(a.forward, "mtp.eh_proj"), 1);
  EXPECT_EQ(count_of(a.backward, "mtp.eh_proj.wgrad"), 1);
  EXPECT_EQ(count_of(a.forward, "decoder.input_norm") - count_of(b.forward, "decoder.input_norm"),
            1);
  // The projection: 2 x tokens x 2h x h/tp.
  for (const auto& k : a.forward.kernels) {
    if (k.name == "mtp.eh_proj") {
      EXPECT_DOUBLE_EQ(k.flops, 2.0 * 4096 * (2.0 * h) * (h / 2.0));
    }
  }
  EXPECT_GT(a.forward.seconds, b.forward.seconds);
  // The first stage is untouched.
  EXPECT_EQ(c_with.stages[0].params_per_gpu, c_without.stages[0].params_per_gpu);
  EXPECT_DOUBLE_EQ(c_with.stages[0].forward.seconds, c_without.stages[0].forward.seconds);
}

// The module's TP calls as Megatron-Core posts them (d98e8a64): the embedding's, the projection's
// input gathered before it (sequence parallelism) and its TP-split output gathered after it; in
// the backward the scatter's gradient gathered, the input gathered again beside the
// input-gradient GEMM, the input gradient reduce-scattered (all-reduced without sequence
// parallelism) beside the weight-gradient GEMM, and the embedding's gradient gathered. In FP8
// both gathers of the projection's input carry its quantised bytes.
TEST(MultiTokenPrediction, TheModulesTensorParallelCalls) {
  struct Call {
    CollectiveKind kind;
    double bytes;  // in all, over `count` calls
    std::int64_t count;
    bool alongside;
    bool operator==(const Call&) const = default;
  };
  const auto calls = [](const BlockPass& p) {
    std::vector<Call> out;
    for (const auto& c : p.collectives) {
      EXPECT_EQ(c.dim, Dim::kTP);
      out.push_back({c.kind, c.bytes, c.count, c.alongside});
    }
    return out;
  };
  const auto pairs = [](const BlockPass& p) {
    std::vector<std::pair<CollectiveKind, std::string>> out;
    for (const auto& o : p.overlaps) {
      EXPECT_EQ(o.method, OverlapMethod::kBulk);
      out.emplace_back(o.kind, o.kernels.at(0));
    }
    return out;
  };
  const Model m = short_deepseek();
  Plan plan = mtp_plan();  // TP 2, SP, 4,096 tokens
  const double Th = 4096.0 * 7168.0, e = 2.0;
  constexpr auto kAG = CollectiveKind::kAllGather;
  constexpr auto kRS = CollectiveKind::kReduceScatter;
  constexpr auto kAR = CollectiveKind::kAllReduce;
  const LayerShape sp = layer_shape(m, plan, 129280);
  EXPECT_EQ(calls(block_pass(BlockKind::kMtp, false, sp)),
            (std::vector<Call>{{kRS, Th * e, 1, false}, {kAG, 2 * Th * e + Th * e, 2, false}}));
  const BlockPass back = block_pass(BlockKind::kMtp, true, sp);
  EXPECT_EQ(calls(back), (std::vector<Call>{{kAG, 2 * Th * e, 2, false},
                                            {kAG, 2 * Th * e, 1, true},
                                            {kRS, 2 * Th * e, 1, true}}));
  EXPECT_EQ(pairs(back), (std::vector<std::pair<CollectiveKind, std::string>>{
                             {kAG, "eh_proj.dgrad"}, {kRS, "eh_proj.wgrad"}}));
  plan.sp = false;
  const LayerShape plain = layer_shape(m, plan, 129280);
  EXPECT_EQ(calls(block_pass(BlockKind::kMtp, false, plain)),
            (std::vector<Call>{{kAR, Th * e, 1, false}, {kAG, Th * e, 1, false}}));
  const BlockPass plain_back = block_pass(BlockKind::kMtp, true, plain);
  EXPECT_EQ(calls(plain_back), (std::vector<Call>{{kAR, 2 * Th * e, 1, true}}));
  EXPECT_EQ(pairs(plain_back),
            (std::vector<std::pair<CollectiveKind, std::string>>{{kAR, "eh_proj.wgrad"}}));
  plan.sp = true;
  plan.precision = Precision::kFP8;
  const LayerShape fp8 = layer_shape(m, plan, 129280);
  EXPECT_EQ(calls(block_pass(BlockKind::kMtp, false, fp8)),
            (std::vector<Call>{{kRS, Th * e, 1, false}, {kAG, 2 * Th + Th * e, 2, false}}));
  EXPECT_EQ(calls(block_pass(BlockKind::kMtp, true, fp8))[1], (Call{kAG, 2 * Th, 1, true}));
  plan.tp = 1;
  plan.sp = false;
  EXPECT_TRUE(block_pass(BlockKind::kMtp, true, layer_shape(m, plan, 129280)).collectives.empty());
}

// Under Megatron-Core the module's layer runs without TP userbuffers even where the decoder's
// layers have them (a model without MLA): its projection, built first, turns the shared switch
// off. Nemotron-4 15B with one module at TP 2: the forward's calls beside their GEMMs are the 32
// decoder layers' 4 each, none of the module's layer's, whose 4 follow the pass.
TEST(MultiTokenPrediction, TheModulesLayerRunsWithoutUserbuffers) {
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  Model with = test::catalog_model("nemotron4-15b");
  with.mtp_layers = 1;
  Model without = with;
  without.mtp_layers = 0;
  Plan plan;
  plan.tp = 2;
  plan.sp = true;
  plan.tp_comm_overlap = true;
  plan.mbs = 1;
  plan.gbs = 8;
  plan.seq_len = 4096;
  EXPECT_TRUE(decoder_tp_overlap(with, plan));
  EXPECT_FALSE(mtp_layer_tp_overlap(with, plan));
  const auto tp_calls = [&](const Model& m, bool alongside) {
    const auto costs = compute_costs(m, platform, plan, megatron_uniform_partition(m, plan, {}));
    std::int64_t n = 0;
    for (const auto& c : costs.stages[0].forward.collectives) {
      if (c.dim == Dim::kTP && c.alongside == alongside) n += c.count;
    }
    return n;
  };
  EXPECT_EQ(tp_calls(without, true), 4 * 32);
  EXPECT_EQ(tp_calls(with, true), 4 * 32);
  // After the pass: the layer's 4, the module's own 3 (the embedding's, the projection's input and
  // output) and its run of the LM head and loss (the head's input gathered, the cross-entropy's 3
  // all-reduces).
  EXPECT_EQ(tp_calls(with, false) - tp_calls(without, false), 4 + 3 + 1 + 3);
}

// A module in a stage of its own hands on the main hidden states and its own (Megatron-Core
// concatenates them along the sequence): twice a decoder layer's output.
TEST(MultiTokenPrediction, StandaloneStageHandsOnBothHiddenStates) {
  const Platform platform = test::catalog_platform("h100-sxm-ndr");
  Plan plan = mtp_plan();
  plan.pp = 3;
  plan.dp = 8;
  plan.gbs = 48;
  const Model m = short_deepseek();
  const Partition p = megatron_layout_partition(m, "Et*4|t*4m|L", 3, 1, "--partition");
  const CostModel c = compute_costs(m, platform, plan, p);
  EXPECT_DOUBLE_EQ(c.stages[1].p2p_bytes, 2.0 * c.stages[0].p2p_bytes);
  EXPECT_DOUBLE_EQ(c.stages[0].p2p_bytes, 4096.0 / 2 * 7168 * 2);  // s/tp x h, BF16
}

// Memory of the module's stage: its layer's activations, five hidden-sized tensors and its token
// ids more, and the logits' fp32 softmax kept twice.
TEST(MultiTokenPrediction, ActivationsOfTheModule) {
  const Plan plan = mtp_plan();
  Model with = short_deepseek();
  Model without = with;
  without.mtp_layers = 0;
  const std::int64_t vocab = padded_vocab(with.vocab_size, plan.vocab_multiple(), plan.tp);
  const auto footprint = [&](const Model& m) {
    return stage_footprint(m, plan, megatron_uniform_partition(m, plan, {}), 1, vocab);
  };
  const double tokens = 4096, h = 7168;
  const LayerActivations layer = layer_activations(with, plan, true);
  const double logits = tokens * static_cast<double>(vocab) / 2;
  const double expected = layer.saved + 8 * tokens + 5 * 2 * tokens * h / 2 +  // the module
                          2 * tokens * h / 2 +                                 // LM head input
                          4 * logits;                                          // its softmax
  EXPECT_DOUBLE_EQ(footprint(with).saved - footprint(without).saved, expected);
}

// Hugging Face's num_nextn_predict_layers is the module count; a key whose absence means 0 may
// say 0 (as configs edited to train without the module do), and the count is bounded.
TEST(MultiTokenPrediction, ReadFromHuggingFaceConfigs) {
  const std::string file = test::data_path("hf/deepseek-v3/config.json");
  nlohmann::json j = nlohmann::json::parse(test::read_file(file));
  EXPECT_EQ(parse_hf_config(j, file).mtp_layers, 1);
  j["num_nextn_predict_layers"] = 0;
  j["n_shared_experts"] = 0;
  const Model none = parse_hf_config(j, file);
  EXPECT_EQ(none.mtp_layers, 0);
  EXPECT_EQ(none.moe.shared_expert_ffn_hidden_size, 0);
  j["num_nextn_predict_layers"] = 17;
  try {
    parse_hf_config(j, "config.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "config.json: $.num_nextn_predict_layers: must be an integer in [0, 16], got 17");
  }
}

}  // namespace
}  // namespace trainsim
