// The README quotes what the binary prints: every code block introduced by a mention of a file
// under results/ (which results/regenerate.sh rewrites) must appear in that file as it is now.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace trainsim {
namespace {

struct Quote {
  std::string file;   // under results/
  std::string block;  // the code block's text
};

// The results/*.txt file a line names in backquotes, or empty.
std::string named_results_file(const std::string& line) {
  const auto start = line.find("`results/");
  if (start == std::string::npos) return {};
  const auto end = line.find('`', start + 1);
  if (end == std::string::npos) return {};
  const std::string name = line.substr(start + 1, end - start - 1);
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".txt") == 0 ? name : "";
}

// Code blocks whose opening fence follows, within three lines, a line naming `results/...txt`.
std::vector<Quote> quotes(const std::string& readme) {
  std::vector<Quote> out;
  std::string last_file;
  int lines_since = 100;
  std::size_t pos = 0;
  while (pos < readme.size()) {
    const auto end = readme.find('\n', pos);
    const std::string line = readme.substr(pos, end == std::string::npos ? end : end - pos);
    pos = end == std::string::npos ? readme.size() : end + 1;
    if (const auto named = named_results_file(line); !named.empty()) {
      last_file = named;
      lines_since = 0;
      continue;
    }
    ++lines_since;
    if (line.rfind("```", 0) != 0 || lines_since > 3 || last_file.empty()) continue;
    const auto close = readme.find("\n```", pos - 1);
    if (close == std::string::npos) break;
    out.push_back({last_file, readme.substr(pos, close + 1 - pos)});
    pos = readme.find('\n', close + 1) + 1;
    last_file.clear();
  }
  return out;
}

TEST(Readme, QuotedOutputsMatchTheResultsFiles) {
  const std::string readme = test::read_file(test::source_dir() + "/README.md");
  const auto found = quotes(readme);
  ASSERT_GE(found.size(), 5u);  // the default run, Nemotron-4 340B, a seed, OOM, schedules
  for (const auto& q : found) {
    const std::string file = test::read_file(test::source_dir() + "/" + q.file);
    EXPECT_NE(file.find(q.block), std::string::npos)
        << "README's block after `" << q.file << "` is not what that file holds now:\n"
        << q.block.substr(0, 400);
  }
}

}  // namespace
}  // namespace trainsim
