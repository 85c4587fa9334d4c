// --megatron-args without --model: the model is the one Megatron-LM builds from the launch's shape
// arguments, it runs as the catalog model it describes, a saved scenario keeps it in a model file
// beside itself, and a launch whose vocabulary lives in a tokenizer file asks for --model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::vector<std::string> kJson = {"--engine", "analytic", "--format", "json"};

// The catalog's Llama 3.1 8B launch script with the null tokenizer of Llama 3's vocabulary
// (128,256 ids), so that its arguments give the whole model.
std::string null_tokenizer_script(const std::string& dir) {
  std::string text =
      test::read_file(test::source_dir() + "/scenarios/launch/llama3.1-8b-8gpu-arrays.sh");
  const std::string hf =
      "--tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Llama-3.1-8B";
  text.replace(text.find(hf), hf.size(), "--tokenizer-type NullTokenizer --vocab-size 128256");
  const std::string path = dir + "/llama8b-launch.sh";
  test::write_file(path, text);
  return path;
}

test::CommandResult run(std::vector<std::string> args) {
  args.insert(args.end(), kJson.begin(), kJson.end());
  return test::run_trainsim(args);
}

TEST(MegatronModelCli, ALaunchWithoutAModelRunsAsTheCatalogModelItDescribes) {
  const std::string script = null_tokenizer_script(test::make_temp_dir());
  const auto built = run({"run", "--megatron-args", "@" + script});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_NE(built.err.find("--megatron-args: the model built from its shape arguments"),
            std::string::npos)
      << built.err;
  const auto catalog = run({"run", "--model", "llama3.1-8b", "--megatron-args", "@" + script});
  ASSERT_EQ(catalog.exit_code, 0) << catalog.err;
  const auto a = nlohmann::json::parse(built.out);
  const auto b = nlohmann::json::parse(catalog.out);
  EXPECT_EQ(a.at("model"), "llama8b-launch");  // the script's name
  EXPECT_EQ(a.at("model_params"), 8030261248);
  EXPECT_EQ(a.at("model_params"), b.at("model_params"));
  EXPECT_EQ(a.at("plan"), b.at("plan"));
  EXPECT_EQ(a.at("step_time_s"), b.at("step_time_s"));
  EXPECT_EQ(a.at("stages"), b.at("stages"));
}

TEST(MegatronModelCli, ASavedScenarioKeepsTheBuiltModelBesideIt) {
  const std::string dir = test::make_temp_dir();
  const std::string script = null_tokenizer_script(dir);
  const std::string saved = dir + "/llama8b.json";
  const auto first = run({"run", "--megatron-args", "@" + script, "--save-scenario", saved});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto scenario = nlohmann::json::parse(test::read_file(saved));
  EXPECT_EQ(scenario.at("model"), "llama8b.model.json");
  const auto model = nlohmann::json::parse(test::read_file(dir + "/llama8b.model.json"));
  EXPECT_EQ(model.at("vocab_size"), 128256);
  EXPECT_EQ(model.at("num_kv_heads"), 8);
  const auto rerun = run({"run", saved});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  const auto a = nlohmann::json::parse(first.out);
  const auto b = nlohmann::json::parse(rerun.out);
  EXPECT_EQ(a.at("plan"), b.at("plan"));
  EXPECT_EQ(a.at("step_time_s"), b.at("step_time_s"));
  EXPECT_EQ(a.at("stages"), b.at("stages"));
  const auto to_stdout =
      test::run_trainsim({"check", "--megatron-args", "@" + script, "--save-scenario", "-"});
  EXPECT_EQ(to_stdout.exit_code, 2);
  EXPECT_EQ(to_stdout.err,
            "trainsim: error: --save-scenario: writes the model built from --megatron-args beside "
            "the scenario: give a file, not '-'\n");
}

TEST(MegatronModelCli, AVocabularyInATokenizerFileAsksForTheModel) {
  const std::string script = test::source_dir() + "/scenarios/launch/llama3.1-8b-8gpu-arrays.sh";
  const auto r = test::run_trainsim({"check", "--megatron-args", "@" + script});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "trainsim: error: --megatron-args --tokenizer-type: HuggingFaceTokenizer reads its "
            "vocabulary from a tokenizer file trainsim does not read: give --model M (a catalog "
            "name, or the model's config.json) for the model\n");
  // With the model given, the launch's shape switches are checked against it.
  const auto gelu = test::run_trainsim({"check", "--model", "gpt3-175b", "--gpus", "8",
                                        "--megatron-args", "--bf16 --seq-length 2048 --swiglu"});
  EXPECT_EQ(gelu.exit_code, 2);
  EXPECT_EQ(gelu.err,
            "trainsim: error: --megatron-args --swiglu: is given, but gpt3-175b has a gelu MLP: "
            "the arguments describe another model than the one given\n");
}

}  // namespace
}  // namespace trainsim
