// A test list's value as bash would find it, three-valued: true or false where the script's own
// variables decide it, unknown where they do not (files, the environment, other commands), and
// joined as Kleene's logic joins them: false && anything is false, true || anything is true.
#include <gtest/gtest.h>

#include <string>
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

TEST(ShellTest, ComparisonsOfKnownValues) {
  EXPECT_EQ(value("[ $N -eq 2 ]"), kT);
  EXPECT_EQ(value("[ $N -ne 2 ]"), kF);
  EXPECT_EQ(value("[ $N -lt 3 ]"), kT);
  EXPECT_EQ(value("[ $N -le 1 ]"), kF);
  EXPECT_EQ(value("[ $N -gt 1 ]"), kT);
  EXPECT_EQ(value("[ $N -ge 3 ]"), kF);
  EXPECT_EQ(value("[ $P -gt 1 ]"), kU);  // not an integer: bash would fail the test, unread here
  EXPECT_EQ(value("[ \"$P\" = fp8 ]"), kT);
  EXPECT_EQ(value("[ \"$P\" != fp8 ]"), kF);
  EXPECT_EQ(value("[ -z \"$E\" ]"), kT);
  EXPECT_EQ(value("[ -n \"$E\" ]"), kF);
  EXPECT_EQ(value("[ \"$P\" ]"), kT);  // a bare string: non-empty
  EXPECT_EQ(value("[ \"$E\" ]"), kF);
  EXPECT_EQ(value("test $N -eq 2"), kT);
  EXPECT_EQ(value("true"), kT);
  EXPECT_EQ(value("false"), kF);
}

// In [[ ]] an unquoted right side of == or != is a pattern: * any run, ? one character.
TEST(ShellTest, PatternsOnlyUnquotedInsideDoubleBrackets) {
  EXPECT_EQ(value("[[ $P == fp* ]]"), kT);
  EXPECT_EQ(value("[[ $P == f?8 ]]"), kT);
  EXPECT_EQ(value("[[ $P == *16 ]]"), kF);
  EXPECT_EQ(value("[[ $P != b* ]]"), kT);
  EXPECT_EQ(value("[[ $P == \"fp*\" ]]"), kF);  // quoted: the string itself
  EXPECT_EQ(value("[ $P = fp* ]"), kF);         // [ ] compares strings
}

// What the script cannot know stays unknown, and only a decided operand settles a join.
TEST(ShellTest, UnknownsJoinAsKleenesLogic) {
  EXPECT_EQ(value("[ -f train.py ]"), kU);
  EXPECT_EQ(value("[ \"$OUT\" = x ]"), kU);
  EXPECT_EQ(value("! [ -f train.py ]"), kU);
  EXPECT_EQ(value("! [ $N -eq 2 ]"), kF);
  EXPECT_EQ(value("[ -f train.py ] && false"), kF);
  EXPECT_EQ(value("[ -f train.py ] && true"), kU);
  EXPECT_EQ(value("[ -f train.py ] || true"), kT);
  EXPECT_EQ(value("[ -f train.py ] || false"), kU);
  EXPECT_EQ(value("[[ -n $P && -d /data ]]"), kU);
  EXPECT_EQ(value("[[ -z $P && -d /data ]]"), kF);
  EXPECT_EQ(value("[ $N -gt 5 -a -f x ]"), kF);
  EXPECT_EQ(value("[ $N -gt 1 -o -f x ]"), kT);
  EXPECT_EQ(value("[ $N -gt 1 -a -f x ]"), kU);
  EXPECT_EQ(value("grep -q x log"), kU);  // another command's status
  // Left to right as bash joins them (no precedence of && over ||), and after ; the last one.
  EXPECT_EQ(value("true || false && false"), kF);
  EXPECT_EQ(value("false; true"), kT);
  EXPECT_EQ(value("[ -f x ]; false"), kF);
}

}  // namespace
}  // namespace trainsim
