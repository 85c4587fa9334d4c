// A plan from Megatron-LM's launch arguments: how a launch script splits into words, which plan
// field each argument sets, Megatron-LM's own defaults where trainsim's differ, and the
// arguments it cannot price, each refused naming the argument.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/plan/megatron_args.hpp"
#include "sim/plan/plan_schema.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

MegatronPlan read(const std::string& text, const std::string& model = "llama3.1-70b") {
  return plan_from_megatron_args(parse_launch_command(text, "--megatron-args"),
                                 test::catalog_model(model), "--megatron-args");
}

std::string error_of(const std::string& text, const std::string& model = "llama3.1-70b") {
  try {
    read(text, model);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(read)";
}

TEST(MegatronArgs, LaunchScriptSplitsAsAShellWouldAtTheScript) {
  const std::string script =
      "#!/bin/bash\n"
      "# a comment --fp16\n"
      "torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py \\\n"
      "  --tensor-model-parallel-size 8 \\\n"
      "  --recompute-modules 'core_attn' \"mlp\" --data-path a#b \\\n"
      "  --seq-length=4096 2>&1 | tee log.txt  # trailing\n";
  const LaunchCommand launch = parse_launch_command(script, "w");
  EXPECT_EQ(launch.launcher, (std::vector<std::string>{"torchrun", "--nproc_per_node", "8",
                                                       "--nnodes", "2", "pretrain_gpt.py"}));
  EXPECT_EQ(launch.args, (std::vector<std::string>{"--tensor-model-parallel-size", "8",
                                                   "--recompute-modules", "core_attn", "mlp",
                                                   "--data-path", "a#b", "--seq-length=4096"}));
  EXPECT_THROW(parse_launch_command("--data-path 'x", "w"), InputError);
}

// Megatron-LM's data parallelism is what the world size leaves, which torchrun's options give.
TEST(MegatronArgs, TorchrunGivesTheGpuCount) {
  EXPECT_EQ(read("torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py --bf16").fields.at("gpus"),
            "16");
  EXPECT_EQ(read("torchrun --nproc-per-node=4 pretrain_gpt.py --bf16").fields.at("gpus"), "4");
  // An elastic node range, torchrun's "gpu", or a shell variable give no count.
  for (const char* launch : {"torchrun --nproc-per-node 8 --nnodes 1:4 pretrain_gpt.py --bf16",
                             "torchrun --nproc-per-node gpu pretrain_gpt.py --bf16",
                             "torchrun --nproc-per-node $GPUS pretrain_gpt.py --bf16"}) {
    EXPECT_FALSE(read(launch).fields.contains("gpus")) << launch;
  }
  // A shell variable is refused only where trainsim reads its value.
  EXPECT_EQ(read("--bf16 --data-path $DATA").unread, (std::vector<std::string>{"--data-path"}));
  EXPECT_EQ(error_of("--bf16 --tensor-model-parallel-size $TP"),
            "--megatron-args --tensor-model-parallel-size: '$TP' is a shell variable: give its "
            "value (trainsim runs no shell)");
}

// NVIDIA's Llama 3 70B recipe layout for 64 H100s as Megatron-LM arguments.
const char* kLlama70b =
    "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 4 --context-parallel-size 2 "
    "--num-layers-per-virtual-pipeline-stage 4 --sequence-parallel --use-distributed-optimizer "
    "--overlap-grad-reduce --overlap-param-gather --tp-comm-overlap --num-layers 80 "
    "--hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64 --group-query-attention "
    "--num-query-groups 8 --seq-length 8192 --micro-batch-size 1 --global-batch-size 128 --bf16 "
    "--lr 1.5e-4 --train-iters 10 --attention-backend auto";

TEST(MegatronArgs, EachArgumentSetsItsFieldAndMegatronsDefaultsTheRest) {
  const MegatronPlan m = read(kLlama70b);
  const std::map<std::string, std::string> expected = {
      {"tp", "4"},
      {"pp", "4"},
      {"cp", "2"},
      {"vp", "5"},  // 80 layers / pp 4 / 4 a virtual stage
      {"schedule", "interleaved"},
      {"sp", "true"},
      {"zero", "1"},
      {"overlap_grad_reduce", "true"},
      {"overlap_param_gather", "true"},
      {"tp_comm_overlap", "true"},
      {"seq_len", "8192"},
      {"mbs", "1"},
      {"gbs", "128"},
      {"precision", "bf16"},
      {"attention_backend", "flash"},
      {"hidden_dropout", "0.1"},
      {"attention_dropout", "0.1"},
  };
  EXPECT_EQ(m.fields, expected);
  EXPECT_EQ(m.origin.at("vp"), "--megatron-args --num-layers-per-virtual-pipeline-stage");
  EXPECT_EQ(m.origin.at("zero"), "--megatron-args --use-distributed-optimizer");
  EXPECT_EQ(m.defaults, (std::vector<std::string>{"hidden_dropout 0.1", "attention_dropout 0.1"}));
  EXPECT_EQ(m.unread, (std::vector<std::string>{"--lr", "--train-iters"}));
  for (const auto& [field, value] : m.fields) {
    EXPECT_NE(find_plan_field(field), nullptr) << field;
  }
}

TEST(MegatronArgs, ExpertModelsTakeMegatronsDispatcherAndSequentialExperts) {
  const std::string ep = "--bf16 --expert-model-parallel-size 8 --sequence-parallel ";
  const MegatronPlan plain = read(ep, "mixtral-8x7b");
  EXPECT_EQ(plain.fields.at("moe_token_dispatcher_type"), "allgather");
  EXPECT_EQ(plain.fields.at("moe_grouped_gemm"), "false");
  const MegatronPlan recipe = read(
      ep +
          "--moe-grouped-gemm --moe-token-dispatcher-type alltoall --expert-tensor-parallel-size 1",
      "mixtral-8x7b");
  EXPECT_EQ(recipe.fields.at("moe_token_dispatcher_type"), "alltoall");
  EXPECT_EQ(recipe.fields.at("moe_grouped_gemm"), "true");
  EXPECT_EQ(recipe.fields.at("etp"), "1");
  EXPECT_EQ(recipe.defaults,
            (std::vector<std::string>{"hidden_dropout 0.1", "attention_dropout 0.1"}));
  // A dense model takes neither default.
  EXPECT_FALSE(read("--bf16").fields.contains("moe_grouped_gemm"));
}

TEST(MegatronArgs, VirtualStagesRecomputationAndPrecisionEachWay) {
  const std::string pp4 = "--bf16 --pipeline-model-parallel-size 4 ";
  EXPECT_EQ(read(pp4 + "--virtual-pipeline-model-parallel-size 5").fields.at("vp"), "5");
  EXPECT_EQ(read(pp4 + "--num-virtual-stages-per-pipeline-rank 2").fields.at("vp"), "2");
  EXPECT_FALSE(read(pp4 + "--num-layers-per-virtual-pipeline-stage 20").fields.contains("vp"));
  // validate_args: a layout's 8 stages over pp 4 are 2 virtual stages each; 4 stages are none.
  const std::string layout = "--pipeline-model-parallel-layout 'Et*10|(t*10|)*6t*10L'";
  const MegatronPlan by_layout = read(pp4 + layout);
  EXPECT_EQ(by_layout.fields.at("vp"), "2");
  EXPECT_EQ(by_layout.fields.at("schedule"), "interleaved");
  EXPECT_EQ(by_layout.origin.at("vp"), "--megatron-args --pipeline-model-parallel-layout");
  EXPECT_EQ(by_layout.fields.at("partition"), "Et*10|(t*10|)*6t*10L");
  EXPECT_FALSE(
      read(pp4 + "--pipeline-model-parallel-layout 'Et*19|t*20|t*20|t*21L'").fields.contains("vp"));
  EXPECT_EQ(read(pp4 + layout + " --virtual-pipeline-model-parallel-size 2").fields.at("vp"), "2");
  EXPECT_EQ(read(pp4 + "--recompute-activations").fields.at("recompute"), "selective");
  // validate_args: --recompute-activations sets selective over a granularity given.
  EXPECT_EQ(
      read(pp4 + "--recompute-granularity full --recompute-activations").fields.at("recompute"),
      "selective");
  const MegatronPlan modules =
      read(pp4 + "--recompute-granularity selective --recompute-modules core_attn mlp");
  EXPECT_EQ(modules.fields.at("recompute_modules"), "core_attn,mlp");
  const std::string full = pp4 + "--recompute-granularity full --recompute-method ";
  EXPECT_EQ(read(full + "uniform --recompute-num-layers 1").fields.at("recompute"), "full");
  // block: every one of a stage's 20 layers, or its first 5.
  const MegatronPlan every = read(full + "block --recompute-num-layers 20");
  EXPECT_EQ(every.fields.at("recompute"), "full");
  EXPECT_FALSE(every.fields.contains("recompute_num_layers"));
  const MegatronPlan block = read(full + "block --recompute-num-layers 5");
  EXPECT_EQ(block.fields.at("recompute"), "full");
  EXPECT_EQ(block.fields.at("recompute_num_layers"), "5");
  EXPECT_FALSE(block.fields.contains("recompute_method"));
  // uniform N: every layer, in groups of N keeping one input each.
  const MegatronPlan uniform = read(full + "uniform --recompute-num-layers 2");
  EXPECT_EQ(uniform.fields.at("recompute"), "full");
  EXPECT_EQ(uniform.fields.at("recompute_method"), "uniform");
  EXPECT_EQ(uniform.fields.at("recompute_num_layers"), "2");
  const MegatronPlan fp8 = read(
      "--bf16 --fp8-format hybrid --fp8-recipe blockwise "
      "--use-precision-aware-optimizer --exp-avg-dtype bf16 "
      "--exp-avg-sq-dtype bf16 --fp8-param-gather");
  EXPECT_EQ(fp8.fields.at("precision"), "fp8");
  EXPECT_EQ(fp8.fields.at("fp8_recipe"), "blockwise");
  EXPECT_EQ(fp8.fields.at("optimizer_state"), "bf16-moments");
  EXPECT_EQ(fp8.fields.at("fp8_param_gather"), "true");
  const MegatronPlan cp = read(
      "--bf16 --context-parallel-size 4 --cp-comm-type a2a+p2p "
      "--hierarchical-context-parallel-sizes 2 2 --use-tp-pp-dp-mapping");
  EXPECT_EQ(cp.fields.at("cp_comm_type"), "a2a+p2p");
  EXPECT_EQ(cp.fields.at("cp_a2a_size"), "2");
  EXPECT_EQ(cp.fields.at("rank_order"), "tp-cp-ep-pp-dp");
  EXPECT_EQ(read("--bf16 --attention-backend flash").fields.at("attention_backend"), "flash-attn2");
  EXPECT_EQ(read("--bf16 --attention-backend local").fields.at("attention_backend"), "unfused");
}

TEST(MegatronArgs, WhatCannotBePricedIsRefusedNamingItsArgument) {
  const std::string w = "--megatron-args ";
  EXPECT_EQ(error_of("--fp16"),
            w + "--fp16: FP16 training with loss scaling is not modelled: trainsim prices BF16 "
                "and FP8");
  EXPECT_EQ(error_of("--tensor-model-parallel-size 8"),
            "--megatron-args: has no --bf16: without it (or --fp16) Megatron-LM trains in FP32, "
            "which trainsim does not price; add --bf16");
  EXPECT_EQ(error_of("--bf16 --expert-model-parallel-size 8 --moe-token-dispatcher-type flex",
                     "mixtral-8x7b"),
            w + "--moe-token-dispatcher-type: flex (DeepEP, HybridEP) is not modelled: trainsim "
                "prices alltoall and allgather");
  EXPECT_EQ(error_of("--bf16 --recompute-granularity full --recompute-method block"),
            w + "--recompute-granularity: full needs --recompute-method and "
                "--recompute-num-layers (Megatron-LM's rule)");
  EXPECT_EQ(error_of("--bf16 --num-layers 32"),
            w + "--num-layers: is 32, but llama3.1-70b has 80: the arguments describe another "
                "model than the one given");
  EXPECT_EQ(error_of("--bf16 --num-attention-heads 64"),
            w + "--num-attention-heads: Megatron-LM builds 64 key-value heads from these "
                "arguments, but llama3.1-70b has 8: add --group-query-attention "
                "--num-query-groups 8");
  EXPECT_EQ(error_of("--bf16 --tensor-model-paralel-size 8"),
            w + "--tensor-model-paralel-size: not an argument trainsim reads; did you mean "
                "--tensor-model-parallel-size?");
  EXPECT_EQ(error_of("--bf16 --sequence-parallel true"), w + "--sequence-parallel: takes no value");
  EXPECT_EQ(error_of("8 --bf16"), "--megatron-args: expected an argument (--name), got '8'");
  // A test on the environment is no matter where its branch changes only what trainsim does not
  // read (a logger's arguments); where it changes an argument trainsim reads, it is refused.
  const std::string env_test =
      "A=(--bf16)\nif [ -n \"$WANDB_API_KEY\" ]; then\n  A+=(--wandb-project p)\nfi\n"
      "if [[ \"$DTYPE\" == fp8 ]]; then\n  A+=(--fp8-format hybrid)\nfi\ntorchrun "
      "--nproc_per_node 8 pretrain_gpt.py ${A[@]}";
  EXPECT_EQ(error_of(env_test),
            "--megatron-args: the test at line 5 depends on what the script cannot know (the "
            "environment, a file, a command's output), and --fp8-format differs with it: "
            "trainsim runs no shell; give that value in the script");
  const std::string logger_only = env_test.substr(0, env_test.find("if [[")) +
                                  "torchrun --nproc_per_node 8 pretrain_gpt.py ${A[@]}";
  EXPECT_EQ(read(logger_only).fields.at("precision"), "bf16");
  EXPECT_EQ(error_of("--bf16 --pipeline-model-parallel-size 3 "
                     "--num-layers-per-virtual-pipeline-stage 4"),
            w + "--num-layers-per-virtual-pipeline-stage: must divide the 80 layers of "
                "llama3.1-70b over pp 3 into whole virtual stages");
  const std::string pp4 = "--bf16 --pipeline-model-parallel-size 4 ";
  EXPECT_EQ(error_of(pp4 + "--pipeline-model-parallel-layout 'Et*16|(t*16|)*3t*16L'"),
            w + "--pipeline-model-parallel-layout: has 5 stages, not a multiple of pp 4");
  EXPECT_EQ(error_of(pp4 + "--num-virtual-stages-per-pipeline-rank 2 "
                           "--pipeline-model-parallel-layout 'Et*10|(t*10|)*6t*10L'"),
            w + "--pipeline-model-parallel-layout: is given with "
                "--num-virtual-stages-per-pipeline-rank: give one (Megatron-LM's rule)");
  EXPECT_EQ(error_of(pp4 + "--pipeline-model-parallel-layout 'Et*10|(t*10|)*6t*10L' "
                           "--virtual-pipeline-model-parallel-size 4"),
            w + "--virtual-pipeline-model-parallel-size: is 4 but "
                "--pipeline-model-parallel-layout gives 2");
}

}  // namespace
}  // namespace trainsim
