#pragma once
// Internal to sim/plan/launch_script: a script's variables and arrays, and its words expanded
// from them as bash expands them: $NAME, ${NAME}, ${NAME[@]}, ${NAME[*]}, ${NAME[N]},
// ${NAME:-word}, ${NAME-word}, $((integer arithmetic)), unquoted results split at whitespace,
// "${NAME[@]}" one word per element. What the script cannot know (the environment, a positional
// argument without a default, $(command) or `command`) is kept as written and marked unknown.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/plan/shell_lexer.hpp"

namespace trainsim {

struct Expansion {
  std::vector<std::string> words;
  bool unknown = false;  // some part is a value from outside the script, kept as written
};

class ShellVariables {
 public:
  /// `where` names the script in errors: a word or variable past kMaxExpansion characters (a
  /// script doubling a variable line by line would otherwise fill the memory).
  explicit ShellVariables(std::string where) : where_(std::move(where)) {}
  static constexpr std::size_t kMaxExpansion = 1'000'000;

  /// The word's fields as a command receives them (split), or as an assignment or a test's
  /// operand takes it (not split: one word, "" where empty).
  Expansion expand(const Token& word, bool split) const;
  /// `unknown`: the value holds something from outside the script (kept as written), which every
  /// expansion of the variable then carries.
  void set(const std::string& name, std::vector<std::string> values, bool append, bool unknown);

 private:
  std::map<std::string, std::vector<std::string>> vars_;
  std::set<std::string> unknown_;
  std::string where_;
  friend class WordBuilder;
};

/// Whether the word is NAME=... or NAME+=... (an assignment where it starts a command).
bool is_assignment(const Token& word);
/// The assignment's name, whether it appends (+=), and its value as a word of its own.
struct Assignment {
  std::string name;
  bool append;
  Token value;
};
Assignment split_assignment(const Token& word);

}  // namespace trainsim
