// A test list's value as bash would find it, three-valued: true or false where the script's own
// variables decide it, unknown where they do not (files, the environment, other commands), and
// joined as Kleene's logic joins them: false && anything is false, true || anything is true.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "sim/plan/shell_expand.hpp"
#include "sim/plan/shell_lexer.hpp"
#include "sim/plan/shell_test.hpp"

namespace trainsim {
namespace {

// The value of `test` with N=2, P=fp8, E empty and OUT from outside the script (unknown).
Truth value(const std::string& test) {
  ShellVariables vars("t");
  vars.set("N", {"2"}, false, false);
  vars.set("P", {"fp8"}, false, false);
  vars.set("E", {""}, false, false);
  vars.set("OUT", {"$OUT"}, false, true);
  return test_status(lex_shell(test, "t"), vars);
}

constexpr Truth kT = Truth::kTrue, kF = Truth::kFalse, kU = Truth::kUnknown;

// Each test list with the value it must have.
void expect_values(const std::vector<std::pair<std::string, Truth>>& cases) {
  for (const auto& [test, truth] : cases) EXPECT_EQ(value(test), truth) << test;
}

TEST(ShellTest, ComparisonsOfKnownValues) {
  expect_values({
      {"[ $N -eq 2 ]", kT},
      {"[ $N -ne 2 ]", kF},
      {"[ $N -lt 3 ]", kT},
      {"[ $N -le 1 ]", kF},
      {"[ $N -gt 1 ]", kT},
      {"[ $N -ge 3 ]", kF},
      {"[ $P -gt 1 ]", kU},  // not an integer: bash would fail the test, unread here
      {"[ \"$P\" = fp8 ]", kT},
      {"[ \"$P\" != fp8 ]", kF},
      {"[ -z \"$E\" ]", kT},
      {"[ -n \"$E\" ]", kF},
      {"[ \"$P\" ]", kT},  // a bare string: non-empty
      {"[ \"$E\" ]", kF},
      {"test $N -eq 2", kT},
      {"true", kT},
      {"false", kF},
  });
}

// In [[ ]] an unquoted right side of == or != is a pattern: * any run, ? one character.
TEST(ShellTest, PatternsOnlyUnquotedInsideDoubleBrackets) {
  expect_values({
      {"[[ $P == fp* ]]", kT},
      {"[[ $P == f?8 ]]", kT},
      {"[[ $P == *16 ]]", kF},
      {"[[ $P != b* ]]", kT},
      {"[[ $P == \"fp*\" ]]", kF},  // quoted: the string itself
      {"[ $P = fp* ]", kF},         // [ ] compares strings
  });
}

// What the script cannot know stays unknown, and only a decided operand settles a join.
TEST(ShellTest, UnknownsJoinAsKleenesLogic) {
  expect_values({
      {"[ -f train.py ]", kU},
      {"[ \"$OUT\" = x ]", kU},
      {"! [ -f train.py ]", kU},
      {"! [ $N -eq 2 ]", kF},
      {"[ -f train.py ] && false", kF},
      {"[ -f train.py ] && true", kU},
      {"[ -f train.py ] || true", kT},
      {"[ -f train.py ] || false", kU},
      {"[[ -n $P && -d /data ]]", kU},
      {"[[ -z $P && -d /data ]]", kF},
      {"[ $N -gt 5 -a -f x ]", kF},
      {"[ $N -gt 1 -o -f x ]", kT},
      {"[ $N -gt 1 -a -f x ]", kU},
      {"grep -q x log", kU},  // another command's status
      // Left to right as bash joins them (no precedence of && over ||), and after ; the last one.
      {"true || false && false", kF},
      {"false; true", kT},
      {"[ -f x ]; false", kF},
  });
}

}  // namespace
}  // namespace trainsim
