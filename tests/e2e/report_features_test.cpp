// End to end: what a plan's recipe options (experts, context parallelism, packed documents,
// LoRA, multi-token prediction, recomputation by module) put in the report.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::string kScenario = test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json";

// The model's size heads the report: every parameter, and for a mixture of experts those a
// token passes through (the catalog's published counts).
TEST(Cli, ReportNamesTheParameterCount) {
  auto r = test::run_trainsim({"run", kScenario, "--engine", "analytic"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nmodel: 70,553,706,496 parameters\nplan: "), std::string::npos) << r.out;
  r = test::run_trainsim({"run", "--model", "mixtral-8x7b", "--platform", "h100-sxm-ndr", "--tp",
                          "2", "--sp", "--ep", "8", "--dp", "8", "--seq-len", "4096", "--engine",
                          "analytic"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nmodel: 46,702,792,704 parameters, 12,748,853,248 active per token\n"),
            std::string::npos)
      << r.out;
}

// --no-moe-grouped-gemm: Megatron-Core's sequential experts, named in the plan line and in the
// JSON plan, each expert GEMM launched once per local expert (Mixtral at EP 2: 4 local experts).
TEST(Cli, SequentialExpertsAreAPlanSwitch) {
  const std::vector<std::string> args = {
      "run",  "--model", "mixtral-8x7b", "--platform", "h100-sxm-ndr", "--ep",    "2",
      "--dp", "8",       "--seq-len",    "4096",       "--engine",     "analytic"};
  auto sequential = args;
  sequential.push_back("--no-moe-grouped-gemm");
  auto r = test::run_trainsim(sequential);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("sequential experts"), std::string::npos) << r.out;
  sequential.insert(sequential.end(), {"--format", "json"});
  auto grouped = args;
  grouped.insert(grouped.end(), {"--format", "json"});
  const auto js = nlohmann::json::parse(test::run_trainsim(sequential).out);
  const auto jg = nlohmann::json::parse(test::run_trainsim(grouped).out);
  EXPECT_EQ(js["plan"]["moe_grouped_gemm"], false);
  EXPECT_EQ(jg["plan"]["moe_grouped_gemm"], true);
  const auto launches = [](const nlohmann::json& j) {
    for (const auto& k : j["provenance"]["kernels"]) {
      if (k["pass"] == "forward" && k["name"] == "decoder.expert_up") return k["count"].get<int>();
    }
    return 0;
  };
  EXPECT_EQ(launches(js), 4 * launches(jg));
}

// Megatron's uneven ends under interleaving: the plan's second line names them and the stage
// table shows each end's 8 layers split over its 2 chunks, laid out chunk by chunk.
TEST(Cli, UnevenEndsInThePlanLineAndTheStages) {
  const auto r = test::run_trainsim({"run",
                                     "--model",
                                     "llama3.1-70b",
                                     "--platform",
                                     "h100-sxm-ndr",
                                     "--tp",
                                     "8",
                                     "--pp",
                                     "4",
                                     "--vp",
                                     "2",
                                     "--schedule",
                                     "interleaved",
                                     "--dp",
                                     "2",
                                     "--gbs",
                                     "16",
                                     "--seq-len",
                                     "4096",
                                     "--decoder-first-pipeline-num-layers",
                                     "8",
                                     "--decoder-last-pipeline-num-layers",
                                     "8",
                                     "--engine",
                                     "analytic"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\n      first stage 8 layers, last stage 8 layers, "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("embedding, decoder 0-3 | decoder 40-43\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decoder 4-19 | decoder 44-59\n"), std::string::npos) << r.out;
}

// Hierarchical CP in both reports: the text names the levels, the JSON plan carries the a2a
// level (and leaves it out for the other kinds), and a2a's all-to-alls are CP traffic.
TEST(Cli, HierarchicalCpInTheReport) {
  std::vector<std::string> args = {
      "run",  "--model",   "llama3.1-8b",    "--platform", "h100-sxm-ndr",  "--cp", "8",
      "--dp", "2",         "--cp-comm-type", "a2a+p2p",    "--cp-a2a-size", "4",    "--gbs",
      "4",    "--seq-len", "8192",           "--engine",   "analytic"};
  const auto text = test::run_trainsim(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(", cp 8 (a2a+p2p: a2a 4 x p2p 2),"), std::string::npos) << text.out;
  args.insert(args.end(), {"--format", "json"});
  const auto j = nlohmann::json::parse(test::run_trainsim(args).out);
  EXPECT_EQ(j["plan"]["cp_comm_type"], "a2a+p2p");
  EXPECT_EQ(j["plan"]["cp_a2a_size"], 4);
  args[10] = "p2p";
  args.erase(args.begin() + 11, args.begin() + 13);  // no a2a level
  const auto ring = nlohmann::json::parse(test::run_trainsim(args).out);
  EXPECT_EQ(ring["plan"]["cp_comm_type"], "p2p");
  EXPECT_FALSE(ring["plan"].contains("cp_a2a_size"));
}

// Packed documents in the text and JSON plan: the key is written only where the sequence packs
// shorter documents, and packing prices less attention than the whole sequence's.
TEST(Cli, PackedDocumentsInTheReport) {
  std::vector<std::string> args = {
      "run", "--model",  "llama3-8b", "--platform", "h100-sxm-ndr", "--dp",
      "8",   "--gbs",    "32",        "--seq-len",  "4096",         "--packed-document-tokens",
      "200", "--engine", "analytic"};
  const auto text = test::run_trainsim(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(", seq 4096 (packed documents of 200), bf16"), std::string::npos)
      << text.out;
  args.insert(args.end(), {"--format", "json"});
  const auto j = nlohmann::json::parse(test::run_trainsim(args).out);
  EXPECT_EQ(j["plan"]["packed_document_tokens"], 200);
  args[12] = "4096";  // one document a sequence: no packing
  const auto whole = nlohmann::json::parse(test::run_trainsim(args).out);
  EXPECT_FALSE(whole["plan"].contains("packed_document_tokens"));
  EXPECT_GT(whole["step_time_s"].get<double>(), j["step_time_s"].get<double>());
}

// LoRA in the text and JSON plan; a scenario's keys run what the flags run; without a rank the
// step is full training's, longer.
TEST(Cli, LoraInTheReport) {
  std::vector<std::string> args = {"run",
                                   "--model",
                                   "llama3-8b",
                                   "--platform",
                                   "h100-sxm-ndr",
                                   "--dp",
                                   "8",
                                   "--gbs",
                                   "32",
                                   "--seq-len",
                                   "4096",
                                   "--lora-rank",
                                   "8",
                                   "--lora-target-modules",
                                   "linear_qkv,linear_fc2",
                                   "--engine",
                                   "analytic"};
  const auto text = test::run_trainsim(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("LoRA rank 8 on linear_qkv,linear_fc2, base weights frozen"),
            std::string::npos)
      << text.out;
  args.insert(args.end(), {"--format", "json"});
  const auto j = nlohmann::json::parse(test::run_trainsim(args).out);
  EXPECT_EQ(j["plan"]["lora_rank"], 8);
  EXPECT_EQ(j["plan"]["lora_target_modules"], "linear_qkv,linear_fc2");
  const auto dir = test::make_temp_dir();
  const nlohmann::json plan = {{"dp", 8},
                               {"gbs", 32},
                               {"seq_len", 4096},
                               {"lora_rank", 8},
                               {"lora_target_modules", "linear_qkv,linear_fc2"}};
  test::write_file(
      dir + "/lora.json",
      nlohmann::json{{"model", "llama3-8b"}, {"platform", "h100-sxm-ndr"}, {"plan", plan}}.dump());
  const auto again = nlohmann::json::parse(
      test::run_trainsim({"run", dir + "/lora.json", "--format", "json", "--engine", "analytic"})
          .out);
  EXPECT_EQ(again["step_time_s"], j["step_time_s"]);
  args[12] = "0";
  args.erase(args.begin() + 13, args.begin() + 15);  // full training: no modules
  const auto full = nlohmann::json::parse(test::run_trainsim(args).out);
  EXPECT_FALSE(full["plan"].contains("lora_rank"));
  EXPECT_GT(full["step_time_s"].get<double>(), j["step_time_s"].get<double>());
}

// DeepSeek-V3's recipe options from the command line: the multi-token-prediction module the
// model trains (its parameters beside the published count, in the text and in the JSON) and
// selective recomputation by module, named in both.
TEST(Cli, MultiTokenPredictionAndRecomputeModulesInTheReport) {
  const std::vector<std::string> args = {"run",
                                         "--model",
                                         "deepseek-v3",
                                         "--platform",
                                         "h100-sxm-ndr",
                                         "--tp",
                                         "2",
                                         "--sp",
                                         "--pp",
                                         "2",
                                         "--dp",
                                         "4",
                                         "--ep",
                                         "8",
                                         "--etp",
                                         "1",
                                         "--seq-len",
                                         "4096",
                                         "--gbs",
                                         "8",
                                         "--engine",
                                         "analytic",
                                         "--recompute",
                                         "selective",
                                         "--recompute-modules",
                                         "mlp,mla_up_proj"};
  const auto text = test::run_trainsim(args);
  ASSERT_LE(text.exit_code, 1) << text.err;
  EXPECT_NE(text.out.find("model: 671,026,404,352 parameters, 36,625,603,584 active per token; 1 "
                          "multi-token-prediction module with 11,610,067,968 parameters more\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("selective recompute (mla_up_proj,mlp)"), std::string::npos);
  EXPECT_NE(text.out.find("decoder 30-59, mtp 0, final_norm, lm_head, loss"), std::string::npos)
      << text.out;
  auto json_args = args;
  json_args.insert(json_args.end(), {"--format", "json", "--mtp-num-layers", "2"});
  const auto json = test::run_trainsim(json_args);
  ASSERT_LE(json.exit_code, 1) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["mtp_num_layers"], 2);
  EXPECT_EQ(j["mtp_params"].get<std::int64_t>(), 2 * std::int64_t{11'610'067'968});
  EXPECT_EQ(j["plan"]["recompute_modules"], "mla_up_proj,mlp");
}

}  // namespace
}  // namespace trainsim
