// A bash test's value as far as the script's own variables decide it.
#include "sim/plan/shell_test.hpp"

#include <cstddef>
#include <exception>
#include <string>
#include <string_view>

namespace trainsim {

namespace {

Truth both(Truth a, Truth b) {
  if (a == Truth::kFalse || b == Truth::kFalse) return Truth::kFalse;
  return a == Truth::kTrue && b == Truth::kTrue ? Truth::kTrue : Truth::kUnknown;
}
Truth either(Truth a, Truth b) {
  if (a == Truth::kTrue || b == Truth::kTrue) return Truth::kTrue;
  return a == Truth::kFalse && b == Truth::kFalse ? Truth::kFalse : Truth::kUnknown;
}
Truth truth(bool b) {
  return b ? Truth::kTrue : Truth::kFalse;
}

// [[ a == pattern ]]: * any run, ? any character (greedy with one backtrack point: linear).
bool glob_match(std::string_view p, std::string_view s) {
  std::size_t i = 0, j = 0, star = std::string_view::npos, resume = 0;
  while (j < s.size()) {
    if (i < p.size() && (p[i] == '?' || p[i] == s[j])) {
      ++i, ++j;
    } else if (i < p.size() && p[i] == '*') {
      star = i++;
      resume = j;
    } else if (star != std::string_view::npos) {
      i = star + 1;
      j = ++resume;
    } else {
      return false;
    }
  }
  while (i < p.size() && p[i] == '*') ++i;
  return i == p.size();
}

// One test of [[ ]] or [ ]: a string, -z / -n and a string, or two operands and an operator.
Truth primary(const std::vector<Token>& t, std::size_t k, std::size_t stop, bool glob,
              const ShellVariables& vars) {
  const auto operand = [&](std::size_t at) { return vars.expand(t[at], false); };
  if (stop - k == 1) {
    const Expansion a = operand(k);
    return a.unknown ? Truth::kUnknown : truth(!a.words[0].empty());
  }
  if (stop - k == 2) {
    const std::string op = bare_word(t[k]);
    const Expansion a = operand(k + 1);
    if ((op != "-z" && op != "-n") || a.unknown) return Truth::kUnknown;
    return truth(a.words[0].empty() == (op == "-z"));
  }
  if (stop - k != 3) return Truth::kUnknown;
  const std::string op = bare_word(t[k + 1]);
  const Expansion a = operand(k);
  const Expansion b = operand(k + 2);
  if (a.unknown || b.unknown) return Truth::kUnknown;
  const std::string& x = a.words[0];
  const std::string& y = b.words[0];
  // An unquoted right side of == in [[ ]] is a pattern.
  const bool pattern =
      glob && t[k + 2].parts.size() == 1 && t[k + 2].parts[0].quote == Quote::kNone;
  if (op == "=" || op == "==") return truth(pattern ? glob_match(y, x) : x == y);
  if (op == "!=") return truth(pattern ? !glob_match(y, x) : x != y);
  long long m = 0, n = 0;
  try {
    m = std::stoll(x);
    n = std::stoll(y);
  } catch (const std::exception&) {
    return Truth::kUnknown;
  }
  if (op == "-eq") return truth(m == n);
  if (op == "-ne") return truth(m != n);
  if (op == "-lt") return truth(m < n);
  if (op == "-le") return truth(m <= n);
  if (op == "-gt") return truth(m > n);
  if (op == "-ge") return truth(m >= n);
  return Truth::kUnknown;
}

// Inside [[ ]] or [ ]: && / || (-a / -o), !, -z, -n, = == != (a pattern in [[ ]]),
// -eq -ne -lt -le -gt -ge, a bare string (non-empty); other tests (files) unknown.
Truth bracket(const std::vector<Token>& t, std::size_t k, std::size_t end, bool double_bracket,
              const ShellVariables& vars) {
  Truth value = Truth::kTrue;
  bool joined_by_or = false;
  while (k < end) {
    bool negated = false;
    while (k < end && bare_word(t[k]) == "!") negated = !negated, ++k;
    std::size_t stop = k;
    while (stop < end && t[stop].kind == TokenKind::kWord && bare_word(t[stop]) != "-a" &&
           bare_word(t[stop]) != "-o") {
      ++stop;
    }
    Truth one = primary(t, k, stop, double_bracket, vars);
    if (negated) one = negate(one);
    value = joined_by_or ? either(value, one) : both(value, one);
    if (stop < end) joined_by_or = t[stop].kind == TokenKind::kOr || bare_word(t[stop]) == "-o";
    k = stop + 1;
  }
  return value;
}

// One command of a test list from `k`, which it advances past.
Truth one_test(const std::vector<Token>& test, std::size_t& k, const ShellVariables& vars) {
  bool negated = false;
  while (k < test.size() && bare_word(test[k]) == "!") negated = !negated, ++k;
  const std::string open = k < test.size() ? bare_word(test[k]) : "";
  Truth t = Truth::kUnknown;
  if (open == "test") {  // test EXPR: [ EXPR ] without its bracket
    std::size_t end = k + 1;
    while (end < test.size() && !ends_command(test[end].kind)) ++end;
    t = bracket(test, k + 1, end, false, vars);
    k = end;
  } else if (open == "[[" || open == "[") {
    const std::string close = open == "[[" ? "]]" : "]";
    std::size_t end = k + 1;
    while (end < test.size() && bare_word(test[end]) != close) ++end;
    t = bracket(test, k + 1, end, open == "[[", vars);
    k = end + 1;
  } else {
    if (open == "true" || open == "false") t = truth(open == "true");
    while (k < test.size() && !ends_command(test[k].kind)) ++k;
  }
  return negated ? negate(t) : t;
}

}  // namespace

bool is_test_command(const std::string& first_word) {
  for (const char* w : {"[", "[[", "test", "true", "false", "!"}) {
    if (first_word == w) return true;
  }
  return false;
}

Truth negate(Truth a) {
  return a == Truth::kUnknown ? a : a == Truth::kTrue ? Truth::kFalse : Truth::kTrue;
}

// A command list of tests joined by && and || (left to right, as bash), each [[ ]], [ ],
// true or false, possibly negated with !; any other command's status is unknown.
Truth test_status(const std::vector<Token>& test, const ShellVariables& vars) {
  Truth value = Truth::kTrue;
  TokenKind join = TokenKind::kAnd;
  for (std::size_t k = 0; k < test.size();) {
    if (test[k].kind == TokenKind::kAnd || test[k].kind == TokenKind::kOr) {
      join = test[k++].kind;
      continue;
    }
    if (ends_command(test[k].kind)) {  // a; b: the last command's status
      join = TokenKind::kSemicolon;
      ++k;
      continue;
    }
    const Truth t = one_test(test, k, vars);
    value = join == TokenKind::kAnd  ? both(value, t)
            : join == TokenKind::kOr ? either(value, t)
                                     : t;
  }
  return value;
}

}  // namespace trainsim
