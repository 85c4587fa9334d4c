// `trainsim list`: the catalog as users browse it, in a child process.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

TEST(List, ShowsTheCatalog) {
  const auto r = test::run_trainsim({"list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // One column of names as wide as the longest, qwen1.5-moe-a2.7b's, and two spaces.
  EXPECT_NE(r.out.find("  llama3.1-8b        8,030,261,248 parameters, 32 layers"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  qwen1.5-moe-a2.7b  14,315,784,192 parameters"), std::string::npos);
  EXPECT_NE(r.out.find("  h100-sxm-ndr       NVIDIA H100 SXM5 80GB, 8 per node"),
            std::string::npos);
  EXPECT_NE(r.out.find("36,625,603,584 active; 1 multi-token-prediction module, 11,610,067,968 "
                       "parameters more\n"),
            std::string::npos)
      << r.out;
  // Each scenario with what it runs, the names of every scenario folder in one column as wide as
  // the longest, llama3.1-8b-cp2-8gpu's.
  // With the measured step times each holds (those trainsim validate NAME compares).
  EXPECT_NE(r.out.find("\n  llama3.1-8b-cp2-8gpu  llama3.1-8b on h100-sxm-ndr, 8 GPUs: tp 1, pp 1, "
                       "cp 2, dp 4, zero 1; 2 published step times\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  deepseek-v3-1024gpu   deepseek-v3 on h100-sxm-ndr, 1,024 GPUs: tp 2, "
                       "pp 8 x vp 4, dp 64, ep 64, etp 1, zero 1; 1 published step time\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find("\n  llama3.1-70b-64gpu    llama3.1-70b on h100-sxm-ndr, 64 GPUs: tp 4, pp 4, "
                 "dp 4\n"),
      std::string::npos)
      << r.out;
  // The seed scenarios (the framework failures) under their folder, and found by name.
  EXPECT_NE(r.out.find("scenarios/seeds/ (run or check them by name too):\n  colossalai-6108       "
                       "llama3.1-70b on h100-sxm-ndr, 64 GPUs: tp 8, pp 4, dp 2\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  nanotron-108          nanotron-108-tiny on h100-sxm-ndr, 8 GPUs: tp 2, "
                       "pp 2, dp 2\n"),
            std::string::npos)
      << r.out;
  // The sweep files with what each sweeps, and swept by name.
  EXPECT_NE(r.out.find("scenarios/sweeps/ (sweep them by name: trainsim sweep NAME --out "
                       "FILE.csv):\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  llama3.1-70b-deadline    llama3.1-70b on h100-sxm-ndr, 1,024 to 8,192 "
                       "GPUs: 64 plans\n"),
            std::string::npos)
      << r.out;
  // The launch files with the flag that reads each.
  EXPECT_NE(r.out.find("scenarios/launch/ (launches to run or check, paths under the data "
                       "folder):\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  nanotron-108.yaml           --nanotron-config "
                       "scenarios/launch/nanotron-108.yaml\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  torchtitan-llama3-70b.toml  --torchtitan-config "
                       "scenarios/launch/torchtitan-llama3-70b.toml\n"),
            std::string::npos)
      << r.out;
  const std::string dir = test::make_temp_dir();
  const auto swept = test::run_trainsim(
      {"sweep", "llama3.1-70b-deadline", "--out", dir + "/plans.csv", "--simgrid-top", "0"});
  EXPECT_EQ(swept.exit_code, 0) << swept.err;
  EXPECT_NE(swept.out.find("64 plans on 1,024 to 8,192 GPUs: "), std::string::npos) << swept.out;
  const auto seed = test::run_trainsim({"check", "nanotron-108"});
  EXPECT_EQ(seed.exit_code, 1) << seed.err;
  EXPECT_EQ(seed.out.rfind("[error] stage-without-parameters (stage 1): ", 0), 0u) << seed.out;
}

// A data folder of one's own: a model or platform file that cannot be read and a scenario the
// rules refuse are listed with the reason, and the listing goes on to the next.
TEST(List, SaysWhyAnEntryCannotBeUsedAndGoesOn) {
  const std::string dir = test::make_temp_dir();
  for (const char* folder : {"/models", "/platforms", "/scenarios"}) {
    std::filesystem::create_directory(dir + folder);
  }
  test::write_file(dir + "/models/a-broken.json", "{\"name\": \"a-broken\"");
  test::write_file(dir + "/models/llama3.1-8b.json",
                   test::read_file(test::source_dir() + "/models/llama3.1-8b.json"));
  test::write_file(dir + "/platforms/a-broken.json", "[]");
  const std::string model = test::source_dir() + "/models/llama3.1-8b.json";
  const std::string platform = test::source_dir() + "/platforms/h100-sxm-ndr.json";
  const auto scenario = [&](const std::string& plan) {
    return "{\"model\": \"" + model + "\", \"platform\": \"" + platform + "\", \"plan\": {" + plan +
           "}}";
  };
  test::write_file(dir + "/scenarios/a-refused.json", scenario("\"tp\": 3, \"seq_len\": 4096"));
  test::write_file(dir + "/scenarios/b-runs.json", scenario("\"tp\": 2, \"seq_len\": 4096"));
  const auto r = test::run_trainsim_on_data(dir, {"list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("models:\n  a-broken        cannot be read: " + dir +
                            "/models/a-broken.json: malformed JSON at line 1, column 20",
                        0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("\n  llama3.1-8b     8,030,261,248 parameters, 32 layers"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("platforms:\n  a-broken        cannot be read: " + dir +
                       "/platforms/a-broken.json: $: must be a JSON object, got an array\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("scenarios:\n  a-refused       cannot be run: " + dir +
                       "/scenarios/a-refused.json: $.plan.tp: must divide the attention heads "
                       "(32), got 3\n  b-runs          llama3.1-8b on h100-sxm-ndr, 2 GPUs: tp 2, "
                       "pp 1, dp 1\n"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace trainsim
