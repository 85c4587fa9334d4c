// `trainsim reshard` end to end: the exit codes of `check` (0 clean, 1 error diagnostics, 2 bad
// input with one line naming the flag or file), on the cases the command was built for.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/safetensors_writer.hpp"
#include "tests/support/support.hpp"

namespace trainsim {
namespace {

std::string tiny() {
  return test::source_dir() + "/scenarios/seeds/models/nanotron-108-tiny.json";
}

// One error line on stderr, nothing on stdout, exit 2; returns the message.
std::string bad_input(const std::vector<std::string>& args) {
  const auto r = test::run_trainsim(args);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const std::string prefix = "trainsim: error: ";
  EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
  return r.err.size() > prefix.size()
             ? r.err.substr(prefix.size(), r.err.size() - prefix.size() - 1)
             : r.err;
}

TEST(ReshardCli, CleanChangeExitsZeroAndReadsTheWholeCheckpoint) {
  const auto r =
      test::run_trainsim({"reshard", "--model", "llama3.1-8b", "--from", "tp=2,pp=1,dp=4", "--to",
                          "tp=4,pp=1,dp=2", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["from"]["padded_vocab"], 128256);
  EXPECT_EQ(j["to"]["padded_vocab"], 128512);
  EXPECT_EQ(j["conversion"]["read_bytes"].get<double>(), 8'030'261'248.0 * 14);
  EXPECT_EQ(j["conversion"]["read_bytes"], j["from"]["checkpoint_bytes"]);
  EXPECT_EQ(j["conversion"]["ranks"].size(), 8u);
  for (const auto& d : j["diagnostics"]) EXPECT_NE(d["severity"], "error") << d["id"];
  const auto& embed = j["tensors"][0];
  EXPECT_EQ(embed["name"], "model.embed_tokens.weight");
  EXPECT_EQ(embed["to"]["shards"][3]["slice"], nlohmann::json({96384, 128512}));
  EXPECT_EQ(embed["to"]["shards"][3]["model_rows"], 31872);
  // Byte-identical across runs.
  const auto again =
      test::run_trainsim({"reshard", "--model", "llama3.1-8b", "--from", "tp=2,pp=1,dp=4", "--to",
                          "tp=4,pp=1,dp=2", "--format", "json"});
  EXPECT_EQ(again.out, r.out);
}

TEST(ReshardCli, Nanotron106ExitsOneWithTheFix) {
  const auto r = test::run_trainsim({"reshard", "--model", tiny(), "--framework", "nanotron",
                                     "--from", "tp=2,pp=1,dp=1", "--to", "tp=1,pp=1,dp=2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("[error] vocab-padding-mismatch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("25139 vs 25138 rows"), std::string::npos);
  EXPECT_NE(r.out.find("fix: pad the new run's vocabulary as the checkpoint's"), std::string::npos);
  const auto fixed =
      test::run_trainsim({"reshard", "--model", tiny(), "--framework", "nanotron", "--from",
                          "tp=2,pp=1,dp=1", "--to", "tp=1,pp=1,dp=2,vocab-divisible-by=2"});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out;
  EXPECT_NE(fixed.out.find("no diagnostics: the checkpoint resumes under the new layout"),
            std::string::npos);
}

// ColossalAI #6108 found on disk: a Hugging Face-format save whose embedding is one TP shard.
TEST(ReshardCli, ColossalAI6108FromASafetensorsCheckpoint) {
  const std::string dir = test::make_temp_dir();
  const std::uint64_t bytes = 16064ull * 8192 * 2;
  test::write_safetensors(dir + "/model-00001-of-00001.safetensors",
                          R"({"model.embed_tokens.weight": {"dtype": "BF16", "shape": [16064, 8192],
                              "data_offsets": [0, )" +
                              std::to_string(bytes) + "]}}",
                          bytes);
  test::write_file(dir + "/model.safetensors.index.json",
                   R"({"metadata": {"total_size": 263192576},
                       "weight_map": {"model.embed_tokens.weight": "model-00001-of-00001.safetensors"}})");
  const auto r = test::run_trainsim({"reshard", "--model", "llama3.1-70b", "--framework",
                                     "colossalai", "--from", "tp=8,pp=4,dp=1", "--to",
                                     "tp=8,pp=4,dp=1", "--checkpoint", dir});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("[error] saved-shard-not-tensor: model.embed_tokens.weight in "
                       "model-00001-of-00001.safetensors is [16064, 8192]: one tensor-parallel "
                       "shard, not the tensor: 16064 x tp 8 = 128512 padded rows"),
            std::string::npos)
      << r.out;
}

TEST(ReshardCli, HostileCheckpointExitsTwo) {
  const std::string dir = test::make_temp_dir();
  test::write_raw(dir + "/model.safetensors", 1u << 30, "{\"a\": 1}");
  EXPECT_EQ(bad_input({"reshard", "--model", "llama3.1-8b", "--from", "tp=1", "--to", "tp=2",
                       "--checkpoint", dir}),
            dir +
                "/model.safetensors: header length 1073741824 exceeds the 8 bytes after it "
                "(truncated or not a safetensors file)");
  test::write_safetensors(dir + "/model.safetensors", "\x01\x02 not json", 0);
  EXPECT_EQ(bad_input({"reshard", "--model", "llama3.1-8b", "--from", "tp=1", "--to", "tp=2",
                       "--checkpoint", dir}),
            dir + "/model.safetensors: the header is not valid JSON (not a safetensors file?)");
}

TEST(ReshardCli, BadInputNamesTheFlag) {
  EXPECT_EQ(bad_input({"reshard", "--model", "llama3.1-8b", "--from", "tp=2"}),
            "--to: is required (see trainsim reshard --help)");
  EXPECT_EQ(bad_input({"reshard", "--model", "llama3.1-8b", "--from", "tp=2", "--to", "tp=3"}),
            "--to tp: must divide the attention heads (32), got 3");
  EXPECT_EQ(
      bad_input({"reshard", "--model", "llama3.1-8b", "--from", "tp=2,pp=64", "--to", "tp=2"}),
      "--from pp: exceeds the number of layers (32)");
  EXPECT_EQ(bad_input({"reshard", "--model", "llama3.1-8b", "--from", "tp=2", "--to", "tp=2",
                       "--framework", "jax"}),
            "--framework: must be one of {megatron, nanotron, deepspeed, colossalai}, got 'jax'");
  EXPECT_EQ(bad_input({"reshard", "--model", "llama3.1-8b", "--from", "tp=2", "--to", "tp=2",
                       "--checkpoint", "/nonexistent/ckpt"}),
            "--checkpoint: no such directory: /nonexistent/ckpt");
}

TEST(ReshardCli, HelpTeachesTheChecks) {
  const auto r = test::run_trainsim({"reshard", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"vocab-padding-mismatch", "saved-shard-not-tensor", "nanotron #106",
                           "ColossalAI #6108", "--checkpoint DIR", "never opened", "Exits 1"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
  EXPECT_NE(test::run_trainsim({"--help"}).out.find("trainsim reshard"), std::string::npos);
}

}  // namespace
}  // namespace trainsim
