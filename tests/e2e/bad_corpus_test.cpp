// The bad-input corpus, tests/data/bad/cases.json: malformed inputs of every kind the tool reads
// (scenarios, models, Hugging Face configs, platforms, kernel databases, sweep files, reshard
// layouts, safetensors checkpoints, flags), each run through the binary as its own test: the exit
// code, nothing on stdout, exactly the one stderr line the manifest gives, and no file left behind
// (no report, no CSV, no *.tmp-*). Time is bounded by ctest's TIMEOUT, not asserted here
// (tests/data/bad/time_cases.sh measures it on a release build).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

struct BadCase {
  std::string name;
  std::vector<std::string> args;  // with {dir} (tests/data/bad) and {tmp} (a scratch directory)
  int exit = 2;
  std::string error;  // the stderr line, without its newline; {dir} and {tmp} substituted
  std::string why;
};

// gtest prints a parameter by its name (and ctest's test list with it), not as bytes.
void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

std::string corpus_dir() {
  return test::source_dir() + "/tests/data/bad";
}

std::string substituted(std::string s, const std::string& tmp) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"{dir}", corpus_dir()},
                                 std::pair<std::string, std::string>{"{tmp}", tmp}}) {
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
      s.replace(at, from.size(), to);
    }
  }
  return s;
}

// The manifest; a manifest that cannot be read is one case that fails saying why.
std::vector<BadCase> load_cases() {
  std::vector<BadCase> cases;
  try {
    const auto j = nlohmann::json::parse(test::read_file(corpus_dir() + "/cases.json"));
    for (const auto& c : j) {
      cases.push_back({c.at("name").get<std::string>(),
                       c.at("args").get<std::vector<std::string>>(), c.at("exit").get<int>(),
                       c.at("error").get<std::string>(), c.at("why").get<std::string>()});
    }
  } catch (const std::exception& e) {
    cases = {{"manifest_unreadable", {}, -1, std::string("cases.json: ") + e.what(), ""}};
  }
  return cases;
}

const std::vector<BadCase>& all_cases() {
  static const std::vector<BadCase> cases = load_cases();
  return cases;
}

// gtest's parameter names take letters, digits and underscores.
std::string test_name(const ::testing::TestParamInfo<BadCase>& info) {
  std::string name = info.param.name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class BadCorpus : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadCorpus, FailsWithItsErrorLine) {
  const BadCase& c = GetParam();
  const std::string tmp = test::make_temp_dir();
  std::vector<std::string> args;
  for (const auto& a : c.args) args.push_back(substituted(a, tmp));
  const auto r = test::run_trainsim(args);
  EXPECT_EQ(r.exit_code, c.exit) << c.why << "\n" << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, substituted(c.error, tmp) + "\n") << c.why;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  if (c.exit == 2) {
    EXPECT_EQ(r.err.rfind("trainsim: error: ", 0), 0u) << r.err;
  }
  // A failed run writes nothing: no report, no CSV, no temporary file.
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(tmp)) {
    left.push_back(std::filesystem::relative(entry.path(), tmp).string());
  }
  EXPECT_TRUE(left.empty()) << "left in {tmp}: " << ::testing::PrintToString(left);
  std::filesystem::remove_all(tmp);
}

INSTANTIATE_TEST_SUITE_P(Cases, BadCorpus, ::testing::ValuesIn(all_cases()), test_name);

// The manifest itself: enough cases, named once each in lower-case-with-dashes, each saying why,
// and every input under tests/data/bad used by some case.
TEST(BadCorpusManifest, CasesAreNamedExplainedAndUseEveryFile) {
  const auto& cases = all_cases();
  EXPECT_GE(cases.size(), 50u);
  std::set<std::string> names;
  for (const auto& c : cases) {
    EXPECT_TRUE(names.insert(c.name).second) << "case named twice: " << c.name;
    EXPECT_TRUE(std::all_of(c.name.begin(), c.name.end(), [](char ch) {
      return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
    })) << c.name;
    EXPECT_FALSE(c.why.empty()) << c.name;
    EXPECT_FALSE(c.error.empty()) << c.name;
  }
  for (const auto& entry : std::filesystem::directory_iterator(corpus_dir())) {
    const std::string file = entry.path().filename().string();
    if (file == "cases.json" || file == "time_cases.sh") continue;
    const bool used = std::any_of(cases.begin(), cases.end(), [&](const BadCase& c) {
      return std::any_of(c.args.begin(), c.args.end(), [&](const std::string& a) {
        return a.find("{dir}/" + file) != std::string::npos;
      });
    });
    EXPECT_TRUE(used) << "tests/data/bad/" << file << " is used by no case";
  }
}

// Hostile but valid: a DeepSpeed type pattern with nested stars ran for hours under std::regex's
// backtracking search; matched in polynomial time it is an ordinary run (ctest's TIMEOUT bounds
// it, no timing assertion here).
TEST(BadCorpusHostile, NestedStarsInADeepSpeedTypePatternFinish) {
  const auto r = test::run_trainsim({"run", "--model", "llama3.1-8b", "--platform", "h100-sxm-ndr",
                                     "--seq-len", "128", "--pp", "2", "--engine", "analytic",
                                     "--partition", "deepspeed-type:(.*)*(.*)*(.*)*(.*)*(.*)*Z"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("deepspeed-type:(.*)*(.*)*(.*)*(.*)*(.*)*Z"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace trainsim
