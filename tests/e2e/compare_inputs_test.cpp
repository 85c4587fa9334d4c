// trainsim compare across models and platforms: a --set column may put the first scenario's plan
// on another platform or model (the same plan on an H200), simulated as trainsim run simulates it
// there, with rows naming each column's platform and model where they differ.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

const std::string kCp2 = "llama3.1-8b-cp2-8gpu";

double run_step(const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"run", kCp2, "--engine", "analytic", "--format", "json"};
  args.insert(args.end(), flags.begin(), flags.end());
  const auto r = test::run_trainsim(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out).at("step_time_s");
}

// The words of the table's row that starts with `name` (none: empty).
std::vector<std::string> words_of_row(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> out;
    for (std::string w; words >> w;) out.push_back(w);
    if (!out.empty() && out[0] == name) return out;
  }
  return {};
}

TEST(CompareInputs, ASetColumnOnAnotherPlatformOrModelIsRunThere) {
  const std::vector<std::string> args = {"compare", kCp2,
                                         "--set",   "platform=h200-sxm-ndr",
                                         "--set",   "model=llama3-8b,platform=h200-sxm-ndr"};
  auto json_args = args;
  json_args.insert(json_args.end(), {"--format", "json"});
  const auto j = test::run_trainsim(json_args);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto columns = nlohmann::json::parse(j.out);
  ASSERT_EQ(columns.size(), 3u);
  EXPECT_EQ(columns[0].at("platform"), "h100-sxm-ndr");
  EXPECT_EQ(columns[1].at("platform"), "h200-sxm-ndr");
  EXPECT_EQ(columns[1].at("model"), "llama3.1-8b");
  EXPECT_EQ(columns[2].at("model"), "llama3-8b");
  EXPECT_EQ(columns[1].at("plan"), columns[0].at("plan"));  // the same plan
  EXPECT_DOUBLE_EQ(columns[0].at("step_time_s").get<double>(), run_step({}));
  EXPECT_DOUBLE_EQ(columns[1].at("step_time_s").get<double>(),
                   run_step({"--platform", "h200-sxm-ndr"}));
  EXPECT_DOUBLE_EQ(columns[2].at("step_time_s").get<double>(),
                   run_step({"--platform", "h200-sxm-ndr", "--model", "llama3-8b"}));
  // The H200's 141 GB hold what is tight on the H100's 80 GB.
  EXPECT_FALSE(columns[0].at("fits").get<bool>());
  EXPECT_TRUE(columns[1].at("fits").get<bool>());

  const auto text = test::run_trainsim(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  // Under the labels, the model and the platform of each column.
  EXPECT_EQ(words_of_row(text.out, "model"),
            (std::vector<std::string>{"model", "llama3.1-8b", "llama3.1-8b", "llama3-8b"}));
  EXPECT_EQ(words_of_row(text.out, "platform"),
            (std::vector<std::string>{"platform", "h100-sxm-ndr", "h200-sxm-ndr", "h200-sxm-ndr"}));
  EXPECT_EQ(text.out.find("\nmodel "), text.out.find('\n'));  // the row under the labels
  // Where the columns share them, no such rows.
  const auto same = test::run_trainsim({"compare", kCp2, "--set", "cp=1,dp=8"});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_TRUE(words_of_row(same.out, "platform").empty()) << same.out;
  EXPECT_TRUE(words_of_row(same.out, "model").empty()) << same.out;
}

TEST(CompareInputs, AnUnknownPlatformOrKeyNamesTheSet) {
  const auto r = test::run_trainsim({"compare", kCp2, "--set", "platform=h300"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("trainsim: error: --set platform=h300: --platform: unknown platforms "
                        "entry \"h300\"",
                        0),
            0u)
      << r.err;
  const auto key = test::run_trainsim({"compare", kCp2, "--set", "platfrom=h200-sxm-ndr"});
  EXPECT_EQ(key.exit_code, 2);
  EXPECT_NE(key.err.find("--set: 'platfrom' is not a plan field, model or platform; did you mean "
                         "platform?"),
            std::string::npos)
      << key.err;
}

}  // namespace
}  // namespace trainsim
