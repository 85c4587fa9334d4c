// The README quotes what the binary prints: every code block introduced by a mention of a file
// under results/ (which results/regenerate.sh rewrites) must appear in that file as it is now; a
// block after a markdown file may quote some of its lines, and some columns of its table rows.
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

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The results/*.txt or *.md file a line names in backquotes, or empty.
std::string named_results_file(const std::string& line) {
  const auto start = line.find("`results/");
  if (start == std::string::npos) return {};
  const auto end = line.find('`', start + 1);
  if (end == std::string::npos) return {};
  const std::string name = line.substr(start + 1, end - start - 1);
  if (name.find('*') != std::string::npos) return {};  // a pattern, not a file
  return ends_with(name, ".txt") || ends_with(name, ".md") ? name : "";
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto end = text.find('\n', pos);
    out.push_back(text.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    pos = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

// A markdown table row's cells, trimmed ("| a | b |" -> a, b); a backslash-escaped bar stays.
std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::string cell;
  for (std::size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '|' && row[i - 1] != '\\') {
      const auto first = cell.find_first_not_of(' ');
      out.push_back(first == std::string::npos
                        ? ""
                        : cell.substr(first, cell.find_last_not_of(' ') - first + 1));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return out;
}

// Whether `part`'s cells are, in order, cells of `row` (a quote of some of its columns).
bool quotes_columns(const std::vector<std::string>& part, const std::vector<std::string>& row) {
  std::size_t k = 0;
  for (const auto& c : row) {
    if (k < part.size() && c == part[k]) ++k;
  }
  return !part.empty() && k == part.size();
}

// Whether every line of a block quoted after a markdown file is one of its lines, or a table
// row that quotes some of the columns of one of its rows.
bool quotes_markdown(const std::string& block, const std::string& file) {
  const auto lines = split_lines(file);
  for (const auto& quoted : split_lines(block)) {
    bool found = false;
    for (const auto& line : lines) {
      found = line == quoted || (quoted.rfind("| ", 0) == 0 && line.rfind("| ", 0) == 0 &&
                                 quotes_columns(cells(quoted), cells(line)));
      if (found) break;
    }
    if (!found) return false;
  }
  return true;
}

// Code blocks whose opening fence follows, within five lines, a line naming a results file.
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
    if (line.rfind("```", 0) != 0 || lines_since > 5 || last_file.empty()) continue;
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
    const bool quoted = ends_with(q.file, ".md") ? quotes_markdown(q.block, file)
                                                 : file.find(q.block) != std::string::npos;
    EXPECT_TRUE(quoted) << "README's block after `" << q.file
                        << "` is not what that file holds now:\n"
                        << q.block.substr(0, 400);
  }
}

}  // namespace
}  // namespace trainsim
