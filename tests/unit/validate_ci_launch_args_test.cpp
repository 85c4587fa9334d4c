// The launch arguments of Megatron-LM's CI runs that their golden rows leave out: what each sets,
// Megatron-LM's defaults where a config is silent, the arguments trainsim does not model (the row
// is skipped with the reason) and an unknown argument (an input error naming its JSON path); and
// the context-parallel and mixture-of-experts runs they complete, as model and plan.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/model/params.hpp"
#include "sim/validate/megatron_ci_args.hpp"
#include "sim/validate/megatron_ci_run.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

nlohmann::json supplement_with(const nlohmann::json& args) {
  return {{"rows", {{"run", {{"config_commit", "c"}, {"vocab_size", 50257}, {"args", args}}}}}};
}

CiLaunchArgs read(const nlohmann::json& args) {
  const auto supplement = supplement_with(args);
  return read_ci_launch_args(&supplement, "model_args.json", "run");
}

std::string error_of(const nlohmann::json& args) {
  try {
    read(args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CiLaunchArgs, MegatronDefaultsWhereTheConfigIsSilent) {
  const CiLaunchArgs a = read(nlohmann::json::object());
  EXPECT_TRUE(a.present);
  EXPECT_EQ(a.vocab_size, 50257);
  EXPECT_DOUBLE_EQ(a.hidden_dropout, 0.1);
  EXPECT_DOUBLE_EQ(a.attention_dropout, 0.1);
  EXPECT_EQ(a.moe_dispatcher, "allgather");
  EXPECT_FALSE(a.moe_grouped_gemm);
  EXPECT_EQ(a.normalization, "LayerNorm");
  EXPECT_FALSE(a.unmodelled);
  const auto none = supplement_with(nlohmann::json::object());
  EXPECT_FALSE(read_ci_launch_args(&none, "model_args.json", "other").present);
  EXPECT_FALSE(read_ci_launch_args(nullptr, "model_args.json", "run").present);
}

TEST(CiLaunchArgs, EachArgumentSetsItsField) {
  const CiLaunchArgs a = read({{"--hidden-dropout", 0.0},
                               {"--attention-dropout", 0.05},
                               {"--moe-token-dispatcher-type", "alltoall"},
                               {"--moe-grouped-gemm", true},
                               {"--moe-shared-expert-intermediate-size", 512},
                               {"--overlap-moe-expert-parallel-comm", true},
                               {"--normalization", "RMSNorm"},
                               {"--use-tp-pp-dp-mapping", true},
                               {"--fp8-recipe", "tensorwise"},
                               {"--fp8-param-gather", true},
                               {"--moe-router-load-balancing-type", "sinkhorn"},
                               {"--no-bias-gelu-fusion", true}});
  EXPECT_EQ(a.hidden_dropout, 0);
  EXPECT_DOUBLE_EQ(a.attention_dropout, 0.05);
  EXPECT_EQ(a.moe_dispatcher, "alltoall");
  EXPECT_TRUE(a.moe_grouped_gemm);
  EXPECT_EQ(a.shared_expert_ffn_hidden_size, 512);
  EXPECT_TRUE(a.moe_a2a_overlap);
  EXPECT_EQ(a.normalization, "RMSNorm");
  EXPECT_TRUE(a.tp_pp_dp_mapping);
  EXPECT_EQ(a.fp8_recipe, "tensorwise");
  EXPECT_TRUE(a.fp8_param_gather);
  EXPECT_FALSE(a.unmodelled);
}

TEST(CiLaunchArgs, UnmodelledArgumentsNameTheReason) {
  EXPECT_EQ(*read({{"--optimizer", "muon"}}).unmodelled,
            "the muon optimizer (its state) not modelled (Adam only)");
  EXPECT_FALSE(read({{"--optimizer", "adam"}}).unmodelled);
  EXPECT_NE(read({{"--use-transformer-engine-op-fuser", true}}).unmodelled->find("fuser"),
            std::string::npos);
  EXPECT_EQ(*read({{"--cross-entropy-loss-fusion", true}, {"--cross-entropy-fusion-impl", "te"}})
                 .unmodelled,
            "Transformer Engine's fused cross-entropy (its buffers) not modelled");
  EXPECT_FALSE(read({{"--cross-entropy-fusion-impl", "te"}}).unmodelled);  // fusion off
  EXPECT_FALSE(read({{"--cross-entropy-loss-fusion", true}}).unmodelled);
  EXPECT_TRUE(read({{"--cross-entropy-loss-fusion", true}}).cross_entropy_loss_fusion);
  EXPECT_EQ(*read({{"--moe-token-dispatcher-type", "flex"}}).unmodelled,
            "the flex token dispatcher (DeepEP, HybridEP) not modelled");
}

TEST(CiLaunchArgs, BadArgumentsAreInputErrorsNamingTheirPath) {
  EXPECT_EQ(error_of({{"--no-such-flag", true}}),
            "model_args.json: $.rows.run.args.--no-such-flag: unknown launch argument (trainsim "
            "neither models nor ignores it)");
  EXPECT_EQ(error_of({{"--kv-lora-rank", 0}}),
            "model_args.json: $.rows.run.args.--kv-lora-rank: must be a positive integer");
  EXPECT_EQ(error_of({{"--num-distributed-optimizer-instances", 0}}),
            "model_args.json: $.rows.run.args.--num-distributed-optimizer-instances: must be a "
            "positive integer");
  EXPECT_EQ(error_of({{"--hidden-dropout", 1.5}}),
            "model_args.json: $.rows.run.args.--hidden-dropout: must be a probability in [0, 1)");
  EXPECT_EQ(error_of({{"--moe-grouped-gemm", nullptr}}),
            "model_args.json: $.rows.run.args.--moe-grouped-gemm: must have a value");
  EXPECT_EQ(error_of({{"--normalization", "GroupNorm"}}),
            "model_args.json: $.rows.run.args.--normalization: \"GroupNorm\" is not one of "
            "LayerNorm, RMSNorm");
  EXPECT_EQ(error_of({{"--moe-token-dispatcher-type", "nccl"}}),
            "model_args.json: $.rows.run.args.--moe-token-dispatcher-type: \"nccl\" is not one "
            "of allgather, alltoall, flex");
}

// The CI's runs as model and plan, from the files in the repository.
const CiReference& reference() {
  static const CiReference ref = load_ci_reference(
      test::source_dir() + "/tests/validation/refdata/megatron_lm_ci_golden_values_h100.json");
  return ref;
}

CiRun run_named(const std::string& name) {
  const auto& rows = reference().rows();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].at("test_case") == name) {
      return read_ci_run(reference(), rows[i], "$.rows[" + std::to_string(i) + "]");
    }
  }
  throw std::runtime_error("no row " + name);
}

// tp 2 x pp 2 x cp 2 on 8 GPUs leaves dp 1; the config turns dropout off.
TEST(CiLaunchArgs, ContextParallelRun) {
  const CiRun run = run_named("gpt3_mcore_te_tp2_pp2_cp2");
  ASSERT_FALSE(run.skipped) << *run.skipped;
  EXPECT_EQ(run.plan.cp, 2);
  EXPECT_EQ(run.plan.dp, 1);
  EXPECT_TRUE(run.plan.sp);
  EXPECT_EQ(run.plan.hidden_dropout, 0);
  EXPECT_EQ(run.plan.attention_dropout, 0);
  EXPECT_FALSE(run.model.moe.is_moe());
}

// Megatron-Core's MoE defaults: the allgather dispatcher and sequential experts where the config
// names neither, expert TP as TP; sequence parallelism off at TP 1 although the row lists it.
TEST(CiLaunchArgs, MixtureOfExpertsRuns) {
  const CiRun sinkhorn = run_named("gpt3_mcore_cp2_pp2_ep2_te_4experts2parallel_nondeterministic");
  ASSERT_FALSE(sinkhorn.skipped) << *sinkhorn.skipped;
  EXPECT_EQ(sinkhorn.model.moe.num_experts, 4);
  EXPECT_EQ(sinkhorn.model.moe.experts_per_token, 1);
  EXPECT_EQ(sinkhorn.model.moe.expert_ffn_hidden_size, 4 * 512);
  EXPECT_EQ(sinkhorn.plan.ep, 2);
  EXPECT_EQ(sinkhorn.plan.cp, 2);
  EXPECT_EQ(sinkhorn.plan.dp, 2);
  EXPECT_EQ(sinkhorn.plan.expert_tp(), 1);
  EXPECT_FALSE(sinkhorn.plan.sp);
  EXPECT_EQ(sinkhorn.plan.moe_dispatcher, MoeDispatcher::kAllGather);
  EXPECT_FALSE(sinkhorn.plan.moe_grouped_gemm);

  const CiRun shared =
      run_named("gpt3_moe_mcore_te_tp4_ep2_etp2_pp2_resume_torch_dist_dist_optimizer");
  ASSERT_FALSE(shared.skipped);
  EXPECT_EQ(shared.model.moe.experts_per_token, 2);
  EXPECT_EQ(shared.model.moe.expert_ffn_hidden_size, 1024);
  EXPECT_EQ(shared.model.moe.shared_expert_ffn_hidden_size, 512);
  EXPECT_EQ(shared.plan.etp, 2);
  EXPECT_EQ(shared.plan.moe_dispatcher, MoeDispatcher::kAllToAll);
  EXPECT_TRUE(shared.plan.moe_grouped_gemm);

  EXPECT_EQ(*run_named("gpt3_moe_mcore_te_ep8_resume_torch_dist_muon").skipped,
            "the muon optimizer (its state) not modelled (Adam only)");
}

// Megatron-Core's multi-latent attention with the config's dimensions: per layer the query path
// (512 x 192 down, its LayerNorm, 192 x 8 heads x (16 + 8) up), the joint key-value down
// projection with the rotary key (512 x (64 + 8)), its LayerNorm, the key-value up projection
// (64 x 8 x (16 + 16)) and the output projection (8 x 16 x 512, with its bias).
TEST(CiLaunchArgs, MultiLatentAttentionRun) {
  const CiLaunchArgs defaults = read(nlohmann::json::object());
  EXPECT_FALSE(defaults.multi_latent_attention);
  EXPECT_EQ(defaults.q_lora_rank, 0);  // --q-lora-rank None: plain queries
  EXPECT_EQ(defaults.kv_lora_rank, 32);
  EXPECT_EQ(defaults.qk_head_dim, 128);
  EXPECT_EQ(defaults.qk_pos_emb_head_dim, 64);
  EXPECT_EQ(defaults.v_head_dim, 128);
  const CiRun run = run_named("gpt3_mcore_te_tp2_pp2_mla");
  ASSERT_FALSE(run.skipped) << *run.skipped;
  const MlaSpec& mla = run.model.mla;
  EXPECT_EQ(mla.q_lora_rank, 192);
  EXPECT_EQ(mla.kv_lora_rank, 64);
  EXPECT_EQ(mla.qk_nope_head_dim, 16);
  EXPECT_EQ(mla.qk_rope_head_dim, 8);
  EXPECT_EQ(mla.v_head_dim, 16);
  EXPECT_EQ(run.model.head_dim, 24);
  EXPECT_EQ(run.model.num_kv_heads, 8);
  const std::int64_t q = 512 * 192 + 2 * 192 + 192 * 8 * 24;
  const std::int64_t kv = 512 * (64 + 8) + 2 * 64 + 64 * 8 * (16 + 16);
  EXPECT_EQ(count_params(run.model).layer_attention, q + kv + 8 * 16 * 512 + 512);
  EXPECT_EQ(run.plan.attention_backend, AttentionBackend::kUnfused);
  EXPECT_NE(run.setup.find(", mla"), std::string::npos) << run.setup;
}

// Megatron-Core's QK layernorm: the config's LayerNorm (weight and bias) over each head's 64
// query and 64 key channels, one per layer.
TEST(CiLaunchArgs, QkLayernormRun) {
  const CiRun run = run_named("gpt3_mcore_te_tp4_pp1_resume_torch_dist_qk_layernorm_test_mode");
  ASSERT_FALSE(run.skipped) << *run.skipped;
  EXPECT_TRUE(run.model.qk_norm);
  Model plain = run.model;
  plain.qk_norm = false;
  EXPECT_EQ(count_params(run.model).layer_attention - count_params(plain).layer_attention,
            2 * 2 * 64);
  EXPECT_NE(run.setup.find(", qk norm"), std::string::npos) << run.setup;
}

// FP8 as the golden row's fp8_format says, with the config's recipe and parameter gather.
TEST(CiLaunchArgs, Fp8Run) {
  const CiRun run =
      run_named("gpt3_weekly_mcore_tp2_pp2_current_scaling_native_fp8_tp_pp_sp_tp_overlap");
  ASSERT_FALSE(run.skipped);
  EXPECT_EQ(run.plan.precision, Precision::kFP8);
  EXPECT_TRUE(run.plan.fp8_param_gather);
  EXPECT_EQ(run.model.norm, NormKind::kRMSNorm);
}

// Two distributed-optimizer instances over the run's dp 4: the plan carries them, and the run
// reads as the one-instance twin does otherwise.
TEST(CiLaunchArgs, DistributedOptimizerInstancesRun) {
  const CiRun run = run_named(
      "gpt3_mcore_te_tp2_pp1_resume_torch_dist_te_8experts2parallel_multi_dist_optimizer_"
      "instances");
  ASSERT_FALSE(run.skipped) << *run.skipped;
  EXPECT_EQ(run.plan.num_distributed_optimizer_instances, 2);
  EXPECT_EQ(run.plan.optimizer_shards(), 2);
  EXPECT_EQ(run.plan.expert_optimizer_shards(), 1);  // edp 8 / (tp 2 x ep 2) = 2, over 2
  Plan twin = run_named(
                  "gpt3_mcore_te_tp2_pp1_resume_torch_dist_te_8experts2parallel_"
                  "dist_optimizer")
                  .plan;
  twin.num_distributed_optimizer_instances = 2;
  EXPECT_EQ(twin, run.plan);
}

}  // namespace
}  // namespace trainsim
