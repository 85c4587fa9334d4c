// The one flag parser of every command (sim/cli/command_line.hpp): each flag a command's --help
// names is one its parser takes (help and parser are one list), and compare and sweep answer bad
// flags as run does.
#include <gtest/gtest.h>

#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "sim/cli/args.hpp"
#include "sim/cli/command_line.hpp"
#include "sim/cli/compare_command.hpp"
#include "sim/cli/sweep_command.hpp"
#include "sim/core/error.hpp"

namespace trainsim {
namespace {

using Parse = std::function<void(const std::vector<std::string>&)>;

// The error `parse` raises on `args`, empty where it raises none.
std::string error_of(const Parse& parse, const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::set<std::string> flags_in(const std::string& help) {
  const std::regex flag("--[a-z][a-z0-9-]*");
  std::set<std::string> flags;
  for (std::sregex_iterator it(help.begin(), help.end(), flag), end; it != end; ++it) {
    flags.insert(it->str());
  }
  return flags;
}

struct Command {
  std::string name;
  std::string help;
  Parse parse;
  std::string value_flag;  // one of its flags that takes a value
};

std::vector<Command> commands() {
  return {
      {"run", run_help("run"), [](const auto& a) { (void)parse_run_options("run", a); }, "--model"},
      {"compare", compare_help(), [](const auto& a) { (void)parse_compare_options(a); }, "--html"},
      {"sweep", sweep_help(), [](const auto& a) { (void)parse_sweep_options(a); }, "--out"},
      {"validate", validate_help(), [](const auto& a) { (void)parse_validate_options(a); },
       "--platform"},
      {"reshard", reshard_help(), [](const auto& a) { (void)parse_reshard_options(a); }, "--from"},
  };
}

// run's help also names other tools' flags (Megatron's) in its prose, and Boost wraps long flag
// names; the other commands' helps name only their own.
TEST(CommandLine, EveryFlagAHelpNamesIsOneItsParserTakes) {
  const auto all = commands();
  for (const Command& c : std::vector<Command>(all.begin() + 1, all.end())) {
    const std::set<std::string> flags = flags_in(c.help);
    EXPECT_GE(flags.size(), 4u) << c.name;
    for (const std::string& flag : flags) {
      // A value where the flag takes one, a switch's next argument where it does not.
      const std::string error = error_of(c.parse, {flag, "1"});
      EXPECT_EQ(error.find("unrecognised"), std::string::npos)
          << c.name << " " << flag << ": " << error;
    }
  }
}

// Boost cuts a word longer than the description column in two; a flag name quoted there
// (--microbatch-group-size-per-virtual-pipeline-stage) would read as two.
TEST(CommandLine, HelpsFitTheirWidthWithNoWordCutAtALineEnd) {
  const std::regex cut("[a-z]-[ ]*$");
  std::vector<Command> helps = commands();
  helps.push_back({"check", run_help("check"), {}, ""});
  helps.push_back({"trainsim", top_help(), {}, ""});
  for (const Command& c : helps) {
    std::istringstream lines(c.help);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_LE(line.size(), kHelpWidth) << c.name << ": " << line;
      EXPECT_FALSE(std::regex_search(line, cut)) << c.name << ": " << line;
    }
  }
}

TEST(CommandLine, CompareAndSweepAnswerAMisspeltFlagWithTheirOwnNearest) {
  const auto cmds = commands();
  EXPECT_EQ(error_of(cmds[1].parse, {"s.json", "--fromat", "json"}),
            "trainsim compare: unrecognised option '--fromat'; did you mean --format? (see "
            "trainsim compare --help)");
  EXPECT_EQ(error_of(cmds[2].parse, {"s.json", "--out", "x.csv", "--simgrid-tp", "2"}),
            "trainsim sweep: unrecognised option '--simgrid-tp'; did you mean --simgrid-top? (see "
            "trainsim sweep --help)");
  // A budget flag is each command's own: the nearest is found among them too.
  EXPECT_EQ(error_of(cmds[2].parse, {"s.json", "--out", "x.csv", "--tokns", "1e12"}),
            "trainsim sweep: unrecognised option '--tokns'; did you mean --tokens? (see "
            "trainsim sweep --help)");
}

TEST(CommandLine, AFlagTakenAsAnotherFlagsValueIsRefusedAlike) {
  for (const Command& c : commands()) {
    EXPECT_EQ(error_of(c.parse, {c.value_flag, "--help"}),
              c.value_flag + ": needs a value, got the flag --help");
  }
  for (const Command& c : {commands()[0], commands()[1], commands()[2]}) {  // the budget's
    EXPECT_EQ(error_of(c.parse, {"s.json", "--tokens", "--format", "json"}),
              "--tokens: needs a value, got the flag --format")
        << c.name;
  }
  EXPECT_EQ(error_of(commands()[1].parse, {"s.json", "--set", "--html", "x.html"}),
            "--set: needs a value, got the flag --html");
}

// Boost collects positional arguments in an option of their own; it is no flag to give.
TEST(CommandLine, ThePositionalArgumentsOptionIsNoFlag) {
  const auto all = commands();
  const std::vector<std::pair<std::string, std::string>> hidden = {{"run", "--scenario"},
                                                                   {"compare", "--scenario"},
                                                                   {"sweep", "--sweep"},
                                                                   {"validate", "--reference"},
                                                                   {"reshard", "--extra"}};
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& [name, flag] = hidden[i];
    ASSERT_EQ(all[i].name, name);
    EXPECT_EQ(error_of(all[i].parse, {flag, "x.json"}), "trainsim " + name +
                                                            ": unrecognised option '" + flag +
                                                            "' (see trainsim " + name + " --help)");
    EXPECT_NE(error_of(all[i].parse, {flag + "=x.json"}).find("unrecognised option"),
              std::string::npos)
        << name;
  }
}

TEST(CommandLine, SweepTakesOneFileOrShardsToMerge) {
  const auto sweep = [](const std::vector<std::string>& a) { return parse_sweep_options(a); };
  EXPECT_EQ(sweep({"s.json", "--out", "x.csv"}).file, "s.json");
  const SweepOptions merged = sweep({"--merge", "a.csv", "b.csv", "--out", "x.csv"});
  EXPECT_EQ(merged.merge, (std::vector<std::string>{"a.csv", "b.csv"}));
  EXPECT_FALSE(merged.file);
  EXPECT_EQ(error_of([&](const auto& a) { (void)sweep(a); }, {"a.json", "b.json", "--out", "x"}),
            "b.json: one sweep file only (see trainsim sweep --help)");
}

}  // namespace
}  // namespace trainsim
