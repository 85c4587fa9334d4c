// Bad input: exit code 2, exactly one line on stderr naming the file and JSON path or the flag,
// no crash and no partial output.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::make_temp_dir(); }

  std::string file(const std::string& name, const std::string& content) {
    const std::string path = dir_ + "/" + name;
    test::write_file(path, content);
    return path;
  }

  // Runs (run with --out) and checks the failure contract; returns the message after the prefix.
  std::string fails(std::vector<std::string> args) {
    const std::string out = dir_ + "/out";
    if (args.at(0) == "run") {
      args.push_back("--out");
      args.push_back(out);
    }
    const auto r = test::run_trainsim(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_FALSE(std::filesystem::exists(out + "/report.json"));
    const std::string prefix = "trainsim: error: ";
    EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    return r.err.substr(prefix.size(), r.err.size() - prefix.size() - 1);
  }

  std::string scenario(const std::string& plan) {
    return R"({"name": "s", "model": "llama3.1-70b", "platform": "h100-sxm-ndr", "plan": )" + plan +
           "}";
  }

  std::string dir_;
};

TEST_F(BadInput, MalformedJson) {
  auto path = file("s.json", "{\n  \"model\": \"llama3.1-70b\",\n  \"plan\": {\"tp\": 4,,}\n}\n");
  auto msg = fails({"run", path});
  EXPECT_EQ(msg.rfind(path + ": malformed JSON at line 3, column", 0), 0u) << msg;
}

TEST_F(BadInput, UnknownKeys) {
  auto path = file("s.json", scenario(R"({"tp": 4, "tpp": 2, "seq_len": 8192})"));
  EXPECT_EQ(fails({"run", path}).rfind(path + ": $.plan.tpp: unknown key", 0), 0u);
  auto top = file(
      "t.json",
      R"({"model": "llama3.1-70b", "platform": "h100-sxm-ndr", "plan": {"seq_len": 8}, "gpu": 1})");
  EXPECT_EQ(fails({"run", top}),
            top +
                ": $.gpu: unknown key (known keys here: checkpoint_s, description, engine, "
                "gpu_mtbf_hours, model, name, notes, plan, platform, price_per_gpu_hour, "
                "published, restart_s, tokens)");
  EXPECT_EQ(fails({"run", top, "--tpp", "2"}).rfind("trainsim run: unrecognised option '--tpp'", 0),
            0u);
}

TEST_F(BadInput, NegativeOrZeroSizes) {
  auto path = file("s.json", scenario(R"({"tp": 4, "gbs": 0, "seq_len": 8192})"));
  EXPECT_EQ(fails({"run", path}), path + ": $.plan.gbs: must be an integer >= 1, got 0");
  EXPECT_EQ(fails({"run", path, "--gbs", "-8"}), "--gbs: must be an integer >= 1, got -8");
  EXPECT_EQ(fails({"run", path, "--gbs", "12x"}), "--gbs: must be an integer, got '12x'");
  auto model = file("m.json", R"({"name": "m", "hidden_size": -64, "num_layers": 2,
      "num_attention_heads": 4, "ffn_hidden_size": 256, "ffn_kind": "gelu", "vocab_size": 100,
      "tied_embeddings": true, "position_embedding": "rope", "norm": "rmsnorm"})");
  EXPECT_EQ(fails({"run", "--model", model, "--platform", "h100-sxm-ndr", "--seq-len", "128"}),
            model + ": $.hidden_size: must be an integer >= 1, got -64");
}

TEST_F(BadInput, PublishedStepTimesAreAnArrayOfFiguresWithTheirSource) {
  auto with = [&](const std::string& published) {
    return file("p.json", R"({"name": "s", "model": "llama3.1-70b", "platform": "h100-sxm-ndr",
        "plan": {"tp": 8, "pp": 8, "seq_len": 4096}, "published": )" +
                              published + "}");
  };
  auto path = with(R"({"step_time_s": 4.67, "source": "x"})");
  EXPECT_EQ(fails({"run", path}),
            path +
                ": $.published: must be a non-empty array of {\"step_time_s\": seconds or "
                "\"tokens_per_s_per_gpu\": throughput, and/or \"max_allocated_gib\": "
                "torch.cuda.max_memory_allocated of the GPU that allocated most, \"source\": "
                "\"who measured it, where\"}, got an object");
  path = with(R"([{"step_time_s": 0, "source": "x"}])");
  EXPECT_EQ(fails({"run", path}).rfind(path + ": $.published[0].step_time_s: must be ", 0), 0u);
  path = with(R"([{"step_time_s": 4.67}])");
  EXPECT_EQ(fails({"run", path}), path + ": $.published[0].source: required key is missing");
  path = with(R"([{"step_time_s": 4.67, "source": "x", "tokens_per_s": 1}])");
  EXPECT_EQ(fails({"run", path}).rfind(path + ": $.published[0].tokens_per_s: unknown key", 0), 0u);
  path = with(R"([{"step_time_s": 4.67, "tokens_per_s_per_gpu": 300, "source": "x"}])");
  EXPECT_EQ(fails({"run", path}), path +
                                      ": $.published[0].tokens_per_s_per_gpu: gives the throughput "
                                      "a second time: give step_time_s or tokens_per_s_per_gpu");
  path = with(R"([{"source": "x"}])");
  EXPECT_EQ(fails({"run", path}).rfind(path + ": $.published[0]: measures nothing: expected ", 0),
            0u);
  path = with(R"([{"max_allocated_gib": -1, "source": "x"}])");
  EXPECT_EQ(fails({"run", path}).rfind(path + ": $.published[0].max_allocated_gib: must be ", 0),
            0u);
}

TEST_F(BadInput, RankOrderNamesEveryDimensionOnce) {
  auto path = file("s.json", scenario(R"({"tp": 4, "seq_len": 8192, "rank_order": "tp-dp-pp"})"));
  EXPECT_EQ(fails({"run", path}),
            path +
                ": $.plan.rank_order: must name tp, cp, ep, dp and pp once each, innermost first, "
                "joined by '-' (Megatron-LM's default: tp-cp-ep-dp-pp), got 'tp-dp-pp'");
  EXPECT_EQ(fails({"run", path, "--rank-order", "tp-cp-ep-dp-dp"}),
            "--rank-order: must name tp, cp, ep, dp and pp once each, innermost first, joined by "
            "'-' (Megatron-LM's default: tp-cp-ep-dp-pp), got 'tp-cp-ep-dp-dp'");
}

// Sizes no plan has, which would overflow a count or exhaust memory: one line, nothing run.
TEST_F(BadInput, AbsurdSizesAreRefusedBeforeTheReplay) {
  const std::string s = test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json";
  EXPECT_EQ(fails({"run", s, "--gbs", "100000000"}),
            "--gbs: gives 25,000,000 micro-batches per step on 64 GPUs: more than "
            "the 100,000,000 passes per step trainsim can replay; use a larger --mbs or a smaller "
            "--gbs");
  // Within that bound, but a task graph of 1e8 passes (some 175 GB): the OOM killer ended it.
  EXPECT_EQ(fails({"run", "--model", "llama3.1-8b", "--platform", "h100-sxm-ndr", "--seq-len",
                   "4096", "--pp", "32", "--gbs", "3125000"}),
            "--gbs: gives 3,125,000 micro-batches per step on 32 pipeline stages: more than the "
            "4,000,000 passes of one GPU per stage trainsim replays in a machine's memory; use a "
            "larger --mbs or a smaller --gbs");
  EXPECT_EQ(fails({"run", s, "--seq-len", "99999999999999"}),
            "--seq-len: must be at most 16,777,216 tokens, got 99,999,999,999,999");
  EXPECT_EQ(fails({"run", s, "--dp", "9223372036854775807"}),
            "--dp: makes the plan larger than 1,048,576 GPUs, the most trainsim simulates");
  EXPECT_EQ(fails({"check", s, "--mbs", "99999999999"}),
            "--mbs: must be at most 16,777,216, got 99,999,999,999");
  EXPECT_EQ(fails({"run", s, "--gbs", "100000000000", "--mbs", "100000", "--seq-len", "16000000"}),
            "--gbs: times seq-len gives 100,000,000,000 x 16,000,000 tokens per step, more than "
            "trainsim handles (1,099,511,627,776)");
  // A model with hidden 64 and 4 heads, `layers` layers and `extra` keys.
  auto model = [&](const std::string& layers, const std::string& extra) {
    return file("m" + layers + ".json", R"({"name": "m", "hidden_size": 64, "num_layers": )" +
                                            layers + R"(, "num_attention_heads": 4,
      "ffn_hidden_size": 256, "ffn_kind": "gelu", "vocab_size": 100, "tied_embeddings": true,
      "position_embedding": "rope", "norm": "rmsnorm")" +
                                            extra + "}");
  };
  auto run_model = [&](const std::string& path) {
    return fails({"run", "--model", path, "--platform", "h100-sxm-ndr", "--seq-len", "128"});
  };
  std::string m = model("2", R"(, "head_dim": 10000000000)");
  EXPECT_EQ(run_model(m), m + ": $.head_dim: must be at most 4194304, got 10000000000");
  m = model("2000000000000", "");
  EXPECT_EQ(run_model(m), m + ": $.num_layers: must be at most 65536, got 2000000000000");
  m = file("w.json", R"({"name": "w", "hidden_size": 4000000, "num_layers": 60000,
      "num_attention_heads": 4, "ffn_hidden_size": 256, "ffn_kind": "gelu", "vocab_size": 100,
      "tied_embeddings": true, "position_embedding": "rope", "norm": "rmsnorm"})");
  EXPECT_EQ(run_model(m), m + ": $.num_layers: with these widths the model has about 3840184 "
                              "trillion parameters; trainsim handles up to 1,000 trillion");
}

// Hugging Face configs: a misspelt key named as such, a config without its class, and the name a
// report gives the model (the hub id it was saved from, else the file's or its folder's name).
TEST_F(BadInput, HuggingFaceConfigsSayWhatIsWrong) {
  const std::string keys =
      R"("num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
         "intermediate_size": 256, "vocab_size": 1000, "max_position_embeddings": 4096)";
  const auto run = [&](const std::string& path) {
    return std::vector<std::string>{"run",        "--model",      path,
                                    "--platform", "h100-sxm-ndr", "--seq-len",
                                    "1024",       "--engine",     "analytic"};
  };
  const auto misspelt = file("misspelt.json", R"({"architectures": ["LlamaForCausalLM"],
      "hiden_size": 64, )" + keys + "}");
  EXPECT_EQ(fails(run(misspelt)), misspelt +
                                      ": $.hidden_size: required key is missing; the object has "
                                      "'hiden_size': a misspelling of 'hidden_size'?");
  const auto classless = file("classless.json", R"({"hidden_size": 64, )" + keys + "}");
  EXPECT_EQ(
      fails(run(classless)).rfind(classless + ": $.architectures: required key is missing", 0), 0u);
  const auto named = file("tiny-llama.json", R"({"architectures": ["LlamaForCausalLM"],
      "hidden_size": 64, )" + keys + "}");
  EXPECT_NE(test::run_trainsim(run(named)).out.find("tiny-llama on h100-sxm-ndr"),
            std::string::npos);
  const auto hub = file("hub.json", R"({"architectures": ["LlamaForCausalLM"],
      "_name_or_path": "acme/Tiny-7B", "hidden_size": 64, )" +
                                        keys + "}");
  EXPECT_NE(test::run_trainsim(run(hub)).out.find("Tiny-7B on h100-sxm-ndr"), std::string::npos);
}

// A key named twice is refused, not silently the last one: "tp": 4, "tp": 8.
TEST_F(BadInput, DuplicateKeysAreRefused) {
  const auto path = file("dup.json", R"({"model": "llama3.1-8b", "platform": "h100-sxm-ndr",
      "plan": {"tp": 4, "seq_len": 2048, "tp": 8}})");
  EXPECT_EQ(fails({"run", path}),
            path +
                ": $.plan.tp: duplicate key (a JSON object names each key once; the last "
                "would silently win)");
  const auto nested = file("nested.json", R"({"a": [{"b": 1}, {"b": 2, "b": 3}]})");
  EXPECT_EQ(fails({"run", "--model", nested, "--platform", "h100-sxm-ndr", "--seq-len", "8"}),
            nested +
                ": $.a[].b: duplicate key (a JSON object names each key once; the last "
                "would silently win)");
}

TEST_F(BadInput, MissingModelOrPlatform) {
  EXPECT_EQ(fails({"run", "--model", "llama9", "--platform", "h100-sxm-ndr", "--seq-len", "8"})
                .rfind("--model: unknown models entry \"llama9\" (known: deepseek-v2, "
                       "deepseek-v2-lite, deepseek-v3, gpt-oss-120b",
                       0),
            0u);
  EXPECT_EQ(fails({"run", "--model", dir_ + "/none.json", "--platform", "h100-sxm-ndr"}),
            "--model: no such file: " + dir_ + "/none.json");
  auto path = file("s.json",
                   R"({"model": "llama3.1-70b", "platform": "h200-nvl", "plan": {"seq_len": 8}})");
  EXPECT_EQ(
      fails({"run", path}).rfind(path + ": $.platform: unknown platforms entry \"h200-nvl\"", 0),
      0u);
}

// A bare name is the catalog's entry even run from a folder holding a directory so named (as
// results/ holds one per scenario); a path to that directory, or a name the catalog lacks, is
// the directory and refused as one.
TEST_F(BadInput, BareNameIsTheCatalogEntryBesideAFolderOfThatName) {
  std::filesystem::create_directory(dir_ + "/llama3.1-8b");
  std::filesystem::create_directory(dir_ + "/llama9");
  const std::vector<std::string> run = {"run",  "--platform", "h100-sxm-ndr", "--seq-len",
                                        "128",  "--engine",   "analytic",     "--format",
                                        "json", "--model"};
  auto args = run;
  args.push_back("llama3.1-8b");
  const auto ok = test::run_trainsim(args, dir_);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("\"step_time_s\""), std::string::npos);
  args.back() = "./llama3.1-8b";
  auto r = test::run_trainsim(args, dir_);
  EXPECT_EQ(r.exit_code, 2);
  const std::string not_a_file =
      " is a directory, not a JSON file (nor a folder holding a config.json)\n";
  EXPECT_EQ(r.err, "trainsim: error: --model: ./llama3.1-8b" + not_a_file);
  args.back() = "llama9";
  r = test::run_trainsim(args, dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "trainsim: error: --model: llama9" + not_a_file);
  // A Hugging Face snapshot folder is read by its config.json, the model named after the folder.
  std::filesystem::copy_file(test::source_dir() + "/tests/data/hf/llama3.1-8b/config.json",
                             dir_ + "/llama9/config.json");
  for (const std::string& spec : std::vector<std::string>{"llama9", "./llama9", dir_ + "/llama9"}) {
    args.back() = spec;
    r = test::run_trainsim(args, dir_);
    ASSERT_EQ(r.exit_code, 0) << spec << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["model"], "llama9") << spec;
  }
}

TEST_F(BadInput, TensorParallelMustDivideHeads) {
  auto path =
      file("s.json", scenario(R"({"tp": 3, "pp": 4, "dp": 4, "gbs": 96, "seq_len": 8192})"));
  EXPECT_EQ(fails({"run", path}),
            path + ": $.plan.tp: must divide the attention heads (64), got 3");
  EXPECT_EQ(fails({"run", path, "--tp", "5"}), "--tp: must divide the attention heads (64), got 5");
  EXPECT_EQ(fails({"check", path}),
            path + ": $.plan.tp: must divide the attention heads (64), got 3");
}

// A data folder that is not there read as an empty catalog: "list" printed nothing and exited 0.
TEST_F(BadInput, MissingDataDirectoryIsNamed) {
  const auto r = test::run_trainsim_on_data("/no/such/trainsim-data", {"list"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "trainsim: error: TRAINSIM_DATA_DIR: no such directory: /no/such/trainsim-data\n");
}

TEST_F(BadInput, UsageErrors) {
  auto r = test::run_trainsim({"simulate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "trainsim: error: trainsim: unknown command 'simulate' (commands: run, check, compare, "
            "validate, "
            "reshard, sweep, list; see trainsim --help)\n");
  EXPECT_EQ(fails({"run", "a.json", "b.json"}),
            "trainsim run: takes one SCENARIO.json, got 2 arguments");
  EXPECT_EQ(fails({"run", "--model", "llama3.1-8b", "--platform", "h100-sxm-ndr", "--seq-len", "8",
                   "--format", "xml"}),
            "--format: must be text or json, got 'xml'");
  // A flag taken for the previous one's value, a directory given as a scenario, list's help.
  EXPECT_EQ(fails({"run", "--tp", "--out", "X"}), "--tp: needs a value, got the flag --out");
  // Output paths too: "--out --svg" made a directory named "--svg", "--trace --strict" a file.
  EXPECT_EQ(fails({"run", "--model", "llama3.1-8b", "--svg", "--trace", "t.json"}),
            "--svg: needs a value, got the flag --trace");
  EXPECT_EQ(fails({"run", "--model", "llama3.1-8b", "--trace", "--strict"}),
            "--trace: needs a value, got the flag --strict");
  const auto out_flag = test::run_trainsim({"run", "--model", "llama3.1-8b", "--out", "--svg"});
  EXPECT_EQ(out_flag.err, "trainsim: error: --out: needs a value, got the flag --svg\n");
  EXPECT_EQ(fails({"run", "a.json", "--tp", "--dp", "4"}),
            "--tp: needs a value, got the flag --dp");
  // check prints diagnostics and writes no report: --out is run's flag (check took it and wrote
  // nothing).
  const auto check_out = test::run_trainsim({"check", "a.json", "--out", "X"});
  EXPECT_EQ(check_out.exit_code, 2);
  EXPECT_NE(check_out.err.find("--out"), std::string::npos) << check_out.err;
  EXPECT_EQ(fails({"run", test::source_dir() + "/scenarios"}),
            "SCENARIO: " + test::source_dir() + "/scenarios is a directory, not a JSON file");
  EXPECT_EQ(fails({"list", "extra"}),
            "trainsim list: takes no arguments (see trainsim list --help)");
  const auto help = test::run_trainsim({"list", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.rfind("usage: trainsim list", 0), 0u);
  // "help CMD" and "--help CMD" are "CMD --help".
  for (const char* word : {"help", "--help"}) {
    const auto run = test::run_trainsim({word, "run"});
    EXPECT_EQ(run.exit_code, 0);
    EXPECT_EQ(run.out, test::run_trainsim({"run", "--help"}).out);
  }
}

// One GPU is "1 GPU", a plan with no pipeline has no bubble (its idle share is not called one,
// nor a rounding error below 0), and a missing --gbs is said.
TEST_F(BadInput, OneGpuReadsAsOne) {
  const auto r = test::run_trainsim({"run", "--model", "llama3.1-8b", "--platform", "h100-sxm-ndr",
                                     "--seq-len", "2048", "--engine", "analytic"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(1 GPU, 1 node)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("idle                 0.0 % of the step (waits on other GPUs; no pipeline)"),
            std::string::npos)
      << r.out;
  // Without --gbs a step is mbs x dp sequences, as Megatron-LM defaults, and the report says so.
  EXPECT_NE(r.out.find("; 1 micro-batch per step (no --gbs: mbs x dp sequences, Megatron-LM's "
                       "default)"),
            std::string::npos)
      << r.out;
}

TEST_F(BadInput, UnwritableOutputLeavesNothingBehind) {
  auto blocker = file("blocker", "not a directory");
  const auto r =
      test::run_trainsim({"run", test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json", "--out",
                          blocker + "/sub"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.err.rfind("trainsim: error: " + blocker + "/sub/report.json: cannot create directory", 0),
      0u)
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(BadInput, UnwritableTraceLeavesNothingBehind) {
  auto blocker = file("blocker", "not a directory");
  const auto r =
      test::run_trainsim({"run", test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json",
                          "--engine", "analytic", "--trace", blocker + "/trace.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("trainsim: error: " + blocker + "/trace.json: cannot", 0), 0u) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(
      fails({"run", test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json", "--trace", ""}),
      "--trace: must not be empty");
}

TEST_F(BadInput, ScheduleOptionsNameTheirFlagOrPath) {
  const std::string s = test::source_dir() + "/scenarios/llama3.1-70b-64gpu.json";
  EXPECT_EQ(fails({"run", s, "--vp", "2"}),
            "--vp: virtual stages need --schedule interleaved (got 1f1b)");
  EXPECT_EQ(fails({"run", s, "--schedule", "interleaved", "--vp", "2", "--gbs", "24"}),
            "--gbs: Megatron-LM's interleaved schedule refuses 6 micro-batches per step with pp 4 "
            "and groups of 4: the last micro-batch group must be empty or hold at least pp "
            "micro-batches");
  EXPECT_EQ(fails({"run", s, "--overlap-param-gather", "--overlap-grad-reduce"}),
            "--overlap-param-gather: needs the distributed optimizer (--zero 1 or more), as in "
            "Megatron-LM");
  // Zero bubble always overlaps its exchanges (1f1b never does: the flag changes nothing there).
  EXPECT_EQ(fails({"run", s, "--schedule", "zb-h1", "--no-overlap-p2p-comm"})
                .rfind("--no-overlap-p2p-comm: applies to the interleaved schedule only", 0),
            0u);
  EXPECT_EQ(fails({"run", s, "--no-moe-grouped-gemm"}),
            "--no-moe-grouped-gemm: applies to mixture-of-experts models; llama3.1-70b is dense");
  EXPECT_EQ(fails({"run", s, "--recompute", "some"}),
            "--recompute: must be one of {none, selective, full, op}, got 'some'");
  auto path = file("v.json", scenario(R"({"tp": 4, "pp": 4, "dp": 4, "seq_len": 8192, "gbs": 128,
      "schedule": "interleaved", "vp": 2, "overlap_p2p_comm": "yes"})"));
  EXPECT_EQ(fails({"run", path}).rfind(path + ": $.plan.overlap_p2p_comm: ", 0), 0u);
  path = file("n.json", scenario(R"({"tp": 4, "pp": 4, "dp": 4, "seq_len": 8192, "gbs": 128,
      "partition": "nanotron", "schedule": "interleaved", "vp": 2})"));
  EXPECT_EQ(fails({"run", path}),
            path + ": $.plan.partition: nanotron has no interleaved schedule (--vp)");
}

}  // namespace
}  // namespace trainsim
