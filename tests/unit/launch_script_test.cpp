// A launch script read as bash would run it as far as its launch needs: variables and arrays
// expanded, branches taken where their tests can be decided, the last command that runs a Python
// script returned; what the script cannot know kept as written, and what trainsim does not read
// of a shell refused naming the line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/plan/launch_script.hpp"

namespace trainsim {
namespace {

using Words = std::vector<std::string>;

Words words(const std::string& script) {
  return read_launch_script(script, "w").words;
}

std::string error_of(const std::string& script) {
  try {
    words(script);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(read)";
}

TEST(LaunchScript, VariablesAndArraysExpandAsBashExpandsThem) {
  const std::string script =
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
      "GPUS=8; NODES=2\n"
      "TP=${TP_SIZE:-4}                 # unset: the default\n"
      "SAVE=${1:-\"ckpt dir\"}           # a positional argument: the caller's, so the default\n"
      "WORLD=$(($GPUS * NODES + 0))\n"
      "DIST=(\n"
      "  --nproc_per_node $GPUS   # a comment inside the array\n"
      "  --nnodes ${NODES}\n"
      ")\n"
      "ARGS=(--tensor-model-parallel-size $TP --save \"$SAVE\")\n"
      "EXTRA=(\"--fp8-format hybrid\")\n"
      "ARGS+=(\"${EXTRA[@]}\" --world $WORLD)\n"
      "NAME=a; NAME+=b\n"
      "torchrun ${DIST[@]} train.py \"${ARGS[@]}\" ${EXTRA[@]} --name $NAME --x \"${ARGS[*]}\"\n";
  EXPECT_EQ(words(script),
            (Words{"torchrun", "--nproc_per_node", "8", "--nnodes", "2", "train.py",
                   "--tensor-model-parallel-size", "4", "--save", "ckpt dir", "--fp8-format hybrid",
                   "--world", "16", "--fp8-format", "hybrid", "--name", "ab", "--x",
                   "--tensor-model-parallel-size 4 --save ckpt dir --fp8-format hybrid --world "
                   "16"}));
}

// What comes from outside the script stays as written, for the argument reading it to name.
TEST(LaunchScript, WhatTheScriptCannotKnowStaysAsWritten) {
  EXPECT_EQ(words("DIR=$(pwd)/x\npython a.py --tp $TP --data $DIR ${1} `date` $((N * 2))"),
            (Words{"python", "a.py", "--tp", "$TP", "--data", "$(pwd)/x", "${1}", "`date`",
                   "$((N * 2))"}));
  EXPECT_EQ(words("python a.py '$TP' \"\\$TP\" a\\ b \"\""),
            (Words{"python", "a.py", "$TP", "$TP", "a b", ""}));
}

// The launch is the last command that runs a Python script; others (echo, mkdir) are not, and
// a pipe or redirection ends it. Arguments alone are their own command.
TEST(LaunchScript, TheLaunchIsTheLastCommandRunningAScript) {
  EXPECT_EQ(words("mkdir -p \"$(dirname x)\"\necho \"see a.py\"\npython a.py --x 1 2>&1 | tee "
                  "log > /dev/null\ncat log && python b.py --y 2 > out.txt\n"),
            (Words{"python", "b.py", "--y", "2"}));
  EXPECT_EQ(words("--bf16 --seq-length 4096"), (Words{"--bf16", "--seq-length", "4096"}));
  // A here-document's lines are its command's input, not commands.
  EXPECT_EQ(words("cat > cfg.yaml <<EOF\nfor x in a; do\n  \"unclosed\nEOF\ncat <<-'END'\n\tcase\n"
                  "\tEND\npython x.py --a 1\n"),
            (Words{"python", "x.py", "--a", "1"}));
}

TEST(LaunchScript, BranchesAreTakenWhereTheirTestsCanBeDecided) {
  const std::string head = "DTYPE=fp8\nTOK=MOCK\nN=2\nA=()\n";
  const auto branch = [&](const std::string& test) {
    return words(head + "if " + test +
                 "; then\n  A+=(yes)\nelse\n  A+=(no)\nfi\npython x.py ${A[@]}");
  };
  const auto yes = Words{"python", "x.py", "yes"};
  const auto no = Words{"python", "x.py", "no"};
  EXPECT_EQ(branch("[[ \"$DTYPE\" == \"fp8\" ]]"), yes);
  EXPECT_EQ(branch("[ \"$DTYPE\" = bf16 ]"), no);
  EXPECT_EQ(branch("[[ $DTYPE == fp* ]]"), yes);  // an unquoted right side is a pattern
  EXPECT_EQ(branch("[[ $DTYPE == \"fp*\" ]]"), no);
  EXPECT_EQ(branch("[[ \"$TOK\" == \"x\" ]] || [[ -n \"$TOK\" && $N -gt 1 ]]"), yes);
  EXPECT_EQ(branch("! [ $N -eq 2 ]"), no);
  EXPECT_EQ(branch("true"), yes);
  // elif and nesting: the first arm whose test holds, inside the arm that runs.
  EXPECT_EQ(words(head +
                  "if [ $N -lt 1 ]; then A=(one)\nelif [ $N -lt 3 ]; then\n  if [ $DTYPE != fp8 ]; "
                  "then A=(inner); else A=(two); fi\nelse A=(three)\nfi\npython x.py ${A[@]}"),
            (Words{"python", "x.py", "two"}));
}

// A test on what the script cannot know (a file, the environment) is read both ways: the launch
// of the first way that launches, the others where they differ, and the tests' lines. A way that
// exits before its launch is no run.
TEST(LaunchScript, AnUndecidedTestIsReadEachWay) {
  const ScriptLaunch check = read_launch_script(
      "if [ ! -f train.py ]; then\n  echo missing; exit 1\nfi\npython train.py --a", "w");
  EXPECT_EQ(check.words, (Words{"python", "train.py", "--a"}));
  EXPECT_TRUE(check.alternatives.empty());
  EXPECT_EQ(check.undecided_lines, (std::vector<int>{1}));
  const ScriptLaunch fp8 = read_launch_script(
      "P=$PRECISION\nA=()\nif [ $P = fp8 ]; then\n  A=(--fp8-format hybrid)\nelif [ -n \"$X\" ]; "
      "then\n  A=(--x)\nfi\npython x.py ${A[@]}",
      "w");
  EXPECT_EQ(fp8.words, (Words{"python", "x.py"}));
  ASSERT_EQ(fp8.alternatives.size(), 2u);
  EXPECT_EQ(fp8.alternatives[0].words, (Words{"python", "x.py", "--fp8-format", "hybrid"}));
  EXPECT_EQ(fp8.alternatives[0].lines, (std::vector<int>{3}));
  EXPECT_EQ(fp8.alternatives[1].words, (Words{"python", "x.py", "--x"}));
  EXPECT_EQ(fp8.alternatives[1].lines, (std::vector<int>{5}));
  EXPECT_EQ(fp8.undecided_lines, (std::vector<int>{3, 5}));
  // Only one way launches: that launch.
  EXPECT_EQ(words("if [ -d /data ]; then\n  python x.py\nfi"), (Words{"python", "x.py"}));
}

// && and || run the next command (or { group }) on the list's status so far: a test's value,
// success for other commands and assignments (the path a launch script is written for).
TEST(LaunchScript, AndAndOrRunOnTheStatusSoFar) {
  const ScriptLaunch usage = read_launch_script(
      "[ -z \"$1\" ] && { echo \"usage: $0 DIR\"; exit 1; }\ncd /work || exit 1\npython x.py --a",
      "w");
  EXPECT_EQ(usage.words, (Words{"python", "x.py", "--a"}));
  EXPECT_TRUE(usage.alternatives.empty());
  EXPECT_EQ(usage.undecided_lines, (std::vector<int>{1}));
  EXPECT_EQ(words("K=v\n[ -n \"$K\" ] && A=(--x) || A=(--y)\ntest -z \"$K\" && B=(--b)\n"
                  "true && false || C=(--c)\npython x.py ${A[@]} ${B[@]} \"${C[@]}\" ${UNSET[@]}"),
            (Words{"python", "x.py", "--x", "--c"}));
}

TEST(LaunchScript, MoreShellThanALaunchNeedsIsRefusedNamingTheLine) {
  EXPECT_EQ(error_of("A=1\nfor n in 1 2; do echo $n; done\npython x.py"),
            "w: line 2: `for` is more shell than trainsim reads: write the launch command with "
            "its arguments in the script, or pass them flat");
  // A function is skipped (nothing calls it here); a launch inside one is refused.
  EXPECT_EQ(words("usage() {\n  echo \"usage: $0\"; exit 1\n}\nfunction log { echo \"$@\"; }\n"
                  "python x.py --a"),
            (Words{"python", "x.py", "--a"}));
  EXPECT_EQ(error_of("main() {\n  torchrun train.py --a\n}\nmain \"$@\""),
            "w: line 2: the launch is inside a function, which trainsim does not call: write it at "
            "the script's top level");
  EXPECT_EQ(error_of("source env.sh\npython x.py"),
            "w: line 1: `source` reads another file, which trainsim does not: copy its "
            "assignments into this script");
  EXPECT_EQ(error_of("(cd x && python y.py)"),
            "w: line 1: a subshell or function ( ... ) is more shell than trainsim reads");
  EXPECT_EQ(error_of("if true; then\npython x.py\n"), "w: line 1: this if has no fi");
  EXPECT_EQ(error_of("python x.py --data 'abc"), "w: line 1: unclosed '");
  EXPECT_EQ(error_of("A=(\n --x 1\n"), "w: line 1: A=( has no closing )");
  // A variable doubled line by line would fill the memory: bounded.
  std::string doubling = "A=aaaaaaaaaaaaaaaa\n";
  for (int k = 0; k < 20; ++k) doubling += "A=$A$A\n";
  EXPECT_EQ(error_of(doubling + "python x.py"), "w: a word expands beyond 1000000 characters");
  std::string elements = "A=(a b)\n";
  for (int k = 0; k < 20; ++k) elements += "A=(${A[@]} ${A[@]})\n";
  EXPECT_EQ(error_of(elements), "w: A grows beyond 1000000 characters");
  // ${A:-${A:-...}} and ((((...)))) nest without limit in bash; here a few dozen levels are read.
  std::string nested = "python x.py --a ";
  for (int k = 0; k < 10000; ++k) nested += "${A:-";
  EXPECT_EQ(words(nested + "1" + std::string(10000, '}')).size(), 4u);
  EXPECT_EQ(words("python x.py " + std::string("$((") + std::string(10000, '(') + "1" +
                  std::string(10000, ')') + "))")
                .size(),
            3u);
}

}  // namespace
}  // namespace trainsim
