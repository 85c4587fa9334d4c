#pragma once
// What a launch script runs, read as bash would run it as far as a launch needs: the variables and
// arrays it assigns (NAME=value, export NAME=value, NAME=( ... ), NAME+=( ... )) expanded where
// it uses them ($NAME, ${NAME}, ${NAME[@]}, ${NAME:-default}, $((arithmetic))), its if / elif /
// else branches taken where their tests ([[ ]] and [ ] comparisons of strings, -z, -n) can be
// decided from those variables, && and || (and their { } groups) run on the status before them
// (a test's value; any other command taken to succeed), exit heeded, and its command that runs a
// Python script (the last one), as the words that command receives. Megatron-LM's example scripts
// build their launch this way (examples/gpt3/train_gpt3_175b_distributed.sh: `torchrun
// ${DISTRIBUTED_ARGS[@]} ...`).
//
// Nothing runs: a value from outside the script (a positional argument without a default, the
// environment, a command's output) stays as written ("$TP"), so that the argument reading it can
// say which. A test on such a value cannot be decided: the script is read each way it could go
// (up to 2^8 ways), and a way whose script exits before its launch is no run. Function
// definitions are skipped (a launch inside one is refused); loops, case, subshells and sourced
// files are refused, naming the line.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim {

struct ScriptLaunch {
  /// The words the launch command receives (the launcher, the script and its arguments), or,
  /// where no command runs a Python script, the words of the first command (arguments given
  /// alone). Where some tests cannot be decided: the first way they could go that launches.
  std::vector<std::string> words;
  /// The launch under another way those tests could go, where its words differ: the words, and
  /// the lines of the tests that go otherwise than for `words`.
  struct Alternative {
    std::vector<std::string> words;
    std::vector<int> lines;
  };
  std::vector<Alternative> alternatives;
  /// The lines of the tests the script could not decide.
  std::vector<int> undecided_lines;
};

/// The first this many undecided tests are tried both ways; later ones are taken as false.
inline constexpr std::size_t kMaxUndecided = 8;

/// InputError at `where` (with the line) for an unclosed quote or what is refused above.
ScriptLaunch read_launch_script(std::string_view text, const std::string& where);

}  // namespace trainsim
