// --megatron-args on the command line: the plan a Megatron-LM launch script sets is the plan the
// flags it is read as set, errors name the argument, and plan flags override it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

// Mixtral 8x7B with EP 8 on 16 GPUs, as a launch script passes it (torchrun's options first).
const char* kScript =
    "torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py \\\n"
    "  --tensor-model-parallel-size 2 --expert-model-parallel-size 4 --sequence-parallel \\\n"
    "  --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --group-query-attention \\\n"
    "  --num-query-groups 8 --num-experts 8 --moe-router-topk 2 \\\n"
    "  --seq-length 4096 --micro-batch-size 1 --global-batch-size 64 --bf16 \\\n"
    "  --use-distributed-optimizer --recompute-activations --lr 1e-4 --save /ckpt\n";

// Without --gpus: the script's torchrun options give 16.
const std::vector<std::string> kRun = {"run",      "--model",  "mixtral-8x7b", "--engine",
                                       "analytic", "--format", "json"};

// The flags of the notes' "read as" and "defaults" lines.
std::vector<std::string> flags_in_notes(const std::string& err) {
  std::vector<std::string> flags;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    for (const std::string marker : {"read as:", "Megatron-LM's defaults:"}) {
      const auto at = line.find(marker);
      if (at == std::string::npos) continue;
      std::istringstream words(line.substr(at + marker.size()));
      for (std::string w; words >> w;) flags.push_back(w);
    }
  }
  return flags;
}

struct TwoRuns {
  test::CommandResult from_script;
  nlohmann::json script_report;
};

// Runs `script` through --megatron-args and again as the flags it is read as: the two reports'
// plan, step and stages are equal.
TwoRuns expect_runs_as_read(const std::string& text) {
  const std::string script = test::make_temp_dir() + "/train.sh";
  test::write_file(script, text);
  std::vector<std::string> args = kRun;
  args.insert(args.end(), {"--megatron-args", "@" + script});
  TwoRuns r{test::run_trainsim(args), {}};
  EXPECT_EQ(r.from_script.exit_code, 0) << r.from_script.err;
  std::vector<std::string> flags = kRun;
  for (const auto& f : flags_in_notes(r.from_script.err)) flags.push_back(f);
  const auto from_flags = test::run_trainsim(flags);
  EXPECT_EQ(from_flags.exit_code, 0) << from_flags.err;
  if (r.from_script.exit_code != 0 || from_flags.exit_code != 0) return r;
  r.script_report = nlohmann::json::parse(r.from_script.out);
  const auto b = nlohmann::json::parse(from_flags.out);
  EXPECT_EQ(r.script_report.at("plan"), b.at("plan"));
  EXPECT_EQ(r.script_report.at("step_time_s"), b.at("step_time_s"));
  EXPECT_EQ(r.script_report.at("stages"), b.at("stages"));
  return r;
}

TEST(MegatronArgsCli, ALaunchScriptRunsAsTheFlagsItIsReadAs) {
  const TwoRuns r = expect_runs_as_read(kScript);
  EXPECT_EQ(r.from_script.err,
            "trainsim: --megatron-args read as: --tp 2 --ep 4 --sp --mbs 1 --gbs 64 --seq-len "
            "4096 --recompute selective --zero 1 --precision bf16 --gpus 16\n"
            "trainsim: --megatron-args: Megatron-LM's defaults: --moe-token-dispatcher-type "
            "allgather --no-moe-grouped-gemm --attention-dropout 0.1 --hidden-dropout 0.1\n"
            "trainsim: --megatron-args: not read (the model gives them, or they set nothing "
            "trainsim prices): --lr, "
            "--save\n");
  ASSERT_FALSE(r.script_report.is_null());
  // Megatron-LM's sequential experts and allgather dispatcher are not trainsim's defaults.
  EXPECT_EQ(r.script_report.at("plan").at("moe_grouped_gemm"), false);
  EXPECT_EQ(r.script_report.at("plan").at("moe_token_dispatcher_type"), "allgather");
  EXPECT_EQ(r.script_report.at("gpus"), 16);
  // --moe-grouped-gemm sets trainsim's default, which no flag writes (there is no such flag):
  // the flags it is read as still run.
  const TwoRuns grouped = expect_runs_as_read(std::string(kScript).replace(
      std::string(kScript).find("--lr"), 4, "--moe-grouped-gemm --lr"));
  EXPECT_EQ(grouped.from_script.err.find("--moe-grouped-gemm"), std::string::npos)
      << grouped.from_script.err;
  ASSERT_FALSE(grouped.script_report.is_null());
  EXPECT_EQ(grouped.script_report.at("plan").at("moe_grouped_gemm"), true);
}

// A script written as Megatron-LM's examples are (variables, arrays, the precision chosen by an
// if) runs as the scenario of the same recipe, and its FP8 arm as that scenario in FP8.
TEST(MegatronArgsCli, AScriptOfArraysAndTestsRunsAsItsScenario) {
  const std::string script = test::source_dir() + "/scenarios/launch/llama3.1-8b-8gpu-arrays.sh";
  const std::string scenario = test::source_dir() + "/scenarios/llama3.1-8b-cp2-8gpu.json";
  const std::vector<std::string> json = {"--engine", "analytic", "--format", "json"};
  const auto run = [&](std::vector<std::string> args) {
    args.insert(args.end(), json.begin(), json.end());
    const auto r = test::run_trainsim(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  };
  for (const std::string dtype : {"bf16", "fp8"}) {
    std::string text = test::read_file(script);
    text.replace(text.find("DTYPE=bf16"), 10, "DTYPE=" + dtype);
    const std::string copy = test::make_temp_dir() + "/train.sh";
    test::write_file(copy, text);
    const auto a = run({"run", "--model", "llama3.1-8b", "--megatron-args", "@" + copy});
    const auto b = run({"run", scenario, "--precision", dtype});
    ASSERT_FALSE(a.is_null() || b.is_null());
    EXPECT_EQ(a.at("plan").at("precision"), dtype);
    EXPECT_EQ(a.at("plan").at("cp"), 2);
    EXPECT_EQ(a.at("gpus"), 8);
    EXPECT_EQ(a.at("step_time_s"), b.at("step_time_s")) << dtype;
    EXPECT_EQ(a.at("stages"), b.at("stages")) << dtype;
  }
}

// --save-scenario writes the inputs as a scenario that runs the same plan: from a launch script
// (the fields it set, Megatron-LM's defaults among them), and from flags on a model given by path,
// which the file names absolutely so that it runs from anywhere.
TEST(MegatronArgsCli, SaveScenarioWritesAScenarioOfTheSamePlan) {
  const std::string dir = test::make_temp_dir();
  std::vector<std::string> args = kRun;
  const std::string saved = dir + "/mixtral.json";
  const std::string script = dir + "/train.sh";
  test::write_file(script, kScript);
  args.insert(args.end(), {"--megatron-args", "@" + script, "--save-scenario", saved});
  const auto from_script = test::run_trainsim(args);
  ASSERT_EQ(from_script.exit_code, 0) << from_script.err;
  const auto scenario = nlohmann::json::parse(test::read_file(saved));
  EXPECT_EQ(scenario.at("model"), "mixtral-8x7b");
  EXPECT_EQ(scenario.at("plan").at("moe_token_dispatcher_type"), "allgather");  // by default
  EXPECT_FALSE(scenario.at("plan").contains("pp"));  // not set: left to its default
  const auto rerun = test::run_trainsim({"run", saved, "--engine", "analytic", "--format", "json"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  const auto a = nlohmann::json::parse(from_script.out);
  const auto b = nlohmann::json::parse(rerun.out);
  EXPECT_EQ(a.at("plan"), b.at("plan"));
  EXPECT_EQ(a.at("step_time_s"), b.at("step_time_s"));
  EXPECT_EQ(a.at("stages"), b.at("stages"));
  // check, a model by path, the scenario on standard output (the diagnostics then not printed).
  const std::string hf = test::source_dir() + "/tests/data/hf/llama3.1-8b";
  const auto checked = test::run_trainsim({"check", "--model", hf, "--tp", "2", "--gpus", "8",
                                           "--seq-len", "4096", "--save-scenario", "-"});
  ASSERT_NE(checked.exit_code, 2) << checked.err;
  const auto from_flags = nlohmann::json::parse(checked.out);
  EXPECT_EQ(from_flags.at("model"), hf + "/config.json");
  EXPECT_EQ(from_flags.at("plan"), (nlohmann::json{{"tp", 2}, {"dp", 4}, {"seq_len", 4096}}));
}

TEST(MegatronArgsCli, FlagsOverrideItAndErrorsNameTheArgument) {
  std::vector<std::string> args = kRun;
  args.insert(args.end(),
              {"--megatron-args", "--bf16 --seq-length 4096 --expert-model-parallel-size 4", "--ep",
               "2", "--gpus", "16"});
  const auto overridden = test::run_trainsim(args);
  ASSERT_EQ(overridden.exit_code, 0) << overridden.err;
  EXPECT_EQ(nlohmann::json::parse(overridden.out).at("plan").at("ep"), 2);
  std::vector<std::string> bad = kRun;
  bad.insert(bad.end(),
             {"--megatron-args", "--bf16 --seq-length 4096 --expert-model-parallel-size 3",
              "--gpus", "16"});
  const auto refused = test::run_trainsim(bad);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err,
            "trainsim: error: --megatron-args --expert-model-parallel-size: must divide the "
            "number of experts (8), got 3\n");
  const auto with_scenario =
      test::run_trainsim({"check", test::default_scenario(), "--megatron-args", "--bf16"});
  EXPECT_EQ(with_scenario.exit_code, 2);
  EXPECT_EQ(with_scenario.err,
            "trainsim: error: --megatron-args: sets the whole plan: give --model M (and --gpus "
            "N) instead of a scenario\n");
  // A value a shell would read otherwise is quoted in the flags it is read as.
  const auto layout =
      test::run_trainsim({"check", "--model", "mixtral-8x7b", "--gpus", "16", "--megatron-args",
                          "--bf16 --seq-length 4096 --pipeline-model-parallel-size 2 "
                          "--pipeline-model-parallel-layout 'Et*16|t*16L'"});
  EXPECT_NE(layout.err.find("read as: --pp 2 --seq-len 4096 --partition 'Et*16|t*16L'"),
            std::string::npos)
      << layout.err;
  const auto no_gpus = test::run_trainsim(
      {"check", "--model", "mixtral-8x7b", "--megatron-args", "--bf16 --seq-length 4096"});
  EXPECT_EQ(no_gpus.err,
            "trainsim: error: --megatron-args: gives no GPU count (Megatron-LM's data parallelism "
            "is what the world size leaves; torchrun's --nproc-per-node and --nnodes give it): "
            "add --gpus N\n");
  // No sequence length: Megatron-LM's argument named, not only trainsim's flag.
  const auto no_seq = test::run_trainsim(
      {"check", "--model", "mixtral-8x7b", "--gpus", "8", "--megatron-args", "--bf16"});
  EXPECT_EQ(no_seq.err,
            "trainsim: error: --megatron-args: has no --seq-length, which Megatron-LM's GPT "
            "training needs: add it, or give --seq-len N\n");
  EXPECT_EQ(test::run_trainsim({"run", "--model", "mixtral-8x7b", "--gpus", "8", "--seq-len",
                                "4096", "--engine", "analytic", "--megatron-args", "--bf16"})
                .exit_code,
            0);
  const auto no_file =
      test::run_trainsim({"check", "--model", "mixtral-8x7b", "--megatron-args", "@nowhere.sh"});
  EXPECT_EQ(no_file.err, "trainsim: error: --megatron-args: no such file: nowhere.sh\n");
}

}  // namespace
}  // namespace trainsim
