#pragma once
// What a launch script runs, read as bash would run it as far as a launch needs: the variables and
// arrays it assigns (NAME=value, export NAME=value, NAME=( ... ), NAME+=( ... )) expanded where
// it uses them ($NAME, ${NAME}, ${NAME[@]}, ${NAME:-default}, $((arithmetic))), its if / elif /
// else branches taken where their tests ([[ ]] and [ ] comparisons of strings, -z, -n) can be
// decided from those variables, and its command that runs a Python script (the last one), as the
// words that command receives. Megatron-LM's example scripts build their launch this way
// (examples/gpt3/train_gpt3_175b_distributed.sh: `torchrun ${DISTRIBUTED_ARGS[@]} ...`).
//
// Nothing runs: a value from outside the script (a positional argument without a default, the
// environment, a command's output) stays as written ("$TP"), so that the argument reading it can
// say which. Loops, case, functions and sourced files are refused, naming the line, as is a branch
// whose test cannot be decided where it assigns a variable or runs the launch.
#include <string>
#include <string_view>
#include <vector>

namespace trainsim {

/// The words the launch command receives (the launcher, the script and its arguments), or, where
/// no command runs a Python script, the words of the first command (arguments given alone).
/// InputError at `where` (with the line) for an unclosed quote or what is refused above.
std::vector<std::string> launch_words(std::string_view text, const std::string& where);

}  // namespace trainsim
