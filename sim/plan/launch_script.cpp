// A launch script run as far as its launch needs: assignments kept, branches taken where their
// tests can be decided, the last command that runs a Python script returned as its words.
#include "sim/plan/launch_script.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>

#include "sim/core/error.hpp"
#include "sim/plan/shell_expand.hpp"
#include "sim/plan/shell_lexer.hpp"
#include "sim/plan/shell_test.hpp"

namespace trainsim {

namespace {

// One run of the script: each test it cannot decide taken as bit k of `choices` says (k counting
// such tests in the order they run).
class Script {
 public:
  struct Result {
    std::optional<std::vector<std::string>> launch;
    std::optional<std::vector<std::string>> first;  // the first command run
    std::vector<int> undecided;                     // the lines of the tests it could not decide
  };

  Script(const std::vector<Token>& tokens, const std::string& where, std::uint32_t choices)
      : t_(tokens), where_(where), vars_(where), choices_(choices) {}

  Result run() {
    while (i_ < t_.size() && !exited_) command();
    if (!branches_.empty() && !exited_) fail(branches_.back().line, "this if has no fi");
    return std::move(result_);
  }

 private:
  enum class Arm { kRun, kSkip };
  struct Branch {
    Arm arm;
    bool taken;  // an earlier arm ran: the rest are skipped
    int line;
    bool group = false;  // { ... }, not an if
  };
  const std::vector<Token>& t_;
  std::size_t i_ = 0;
  const std::string& where_;
  ShellVariables vars_;
  std::uint32_t choices_;
  std::vector<Branch> branches_;
  bool exited_ = false;
  Result result_;
  // A && or || before the next command, and the status of the list so far: a test's value, that
  // of any other command (or assignment) success.
  std::optional<TokenKind> pending_;
  Truth status_ = Truth::kTrue;

  [[noreturn]] void fail(int line, const std::string& what) const {
    fail_input(where_, "line " + std::to_string(line) + ": " + what);
  }

  // A test's value; one the script cannot decide is the next bit of the choices.
  bool decide(Truth v, int line) {
    if (v != Truth::kUnknown) return v == Truth::kTrue;
    const auto k = result_.undecided.size();
    result_.undecided.push_back(line);
    return k < 32 && ((choices_ >> k) & 1U) != 0;
  }

  // Whether commands here run, given the outermost `depth` enclosing branches.
  Arm mode(std::size_t depth) const {
    for (std::size_t k = 0; k < depth; ++k) {
      if (branches_[k].arm == Arm::kSkip) return Arm::kSkip;
    }
    return Arm::kRun;
  }
  Arm mode() const { return mode(branches_.size()); }

  void command() {
    const Token& t = t_[i_];
    if (t.kind == TokenKind::kAnd || t.kind == TokenKind::kOr) {
      pending_ = t.kind;
      ++i_;
      return;
    }
    if (ends_command(t.kind)) {
      pending_.reset();
      ++i_;
      return;
    }
    // After && (||) a command runs where the list so far succeeded (failed).
    bool runs = mode() == Arm::kRun;
    if (pending_) {
      const Truth want = *pending_ == TokenKind::kAnd ? status_ : negate(status_);
      pending_.reset();
      runs = runs && decide(want, t.line);
    }
    const std::string k = bare_word(t);
    if (k == "{" || k == "}") {
      ++i_;
      if (k == "{") branches_.push_back({runs ? Arm::kRun : Arm::kSkip, true, t.line, true});
      if (k == "}" && (branches_.empty() || !branches_.back().group)) fail(t.line, "} without {");
      if (k == "}") branches_.pop_back();
      return;
    }
    if (k == "if" || k == "elif" || k == "else" || k == "fi" || k == "then") {
      ++i_;
      if (k == "if") open_branch(t.line);
      if (k == "elif" || k == "else") next_arm(t.line, k == "elif");
      if (k == "fi") {
        if (branches_.empty() || branches_.back().group) fail(t.line, "fi without if");
        branches_.pop_back();
      }
      return;
    }
    const bool defines =
        k == "function" ||
        (i_ + 2 < t_.size() && t.kind == TokenKind::kWord && !is_assignment(t) &&
         t_[i_ + 1].kind == TokenKind::kOpen && t_[i_ + 2].kind == TokenKind::kClose);
    if (defines) return skip_function(t.line);
    for (const char* loop : {"for", "while", "until", "case", "select"}) {
      if (k == loop) {
        fail(t.line, "`" + k +
                         "` is more shell than trainsim reads: write the launch command with its "
                         "arguments in the script, or pass them flat");
      }
    }
    if (k == "source" || k == ".") {
      fail(t.line, "`" + k +
                       "` reads another file, which trainsim does not: copy its assignments "
                       "into this script");
    }
    simple_command(runs);
  }

  // A function's definition (NAME() { ... } or function NAME { ... }) is skipped: trainsim runs no
  // calls. A launch inside one is refused, since it would run only where the function is called.
  void skip_function(int line) {
    while (i_ < t_.size() && bare_word(t_[i_]) != "{") ++i_;
    int depth = 0;
    for (; i_ < t_.size(); ++i_) {
      const std::string k = bare_word(t_[i_]);
      if (k == "{") ++depth;
      if (k == "}" && --depth == 0) break;
      if (t_[i_].kind == TokenKind::kWord && plain_text(t_[i_]).ends_with(".py")) {
        fail(t_[i_].line,
             "the launch is inside a function, which trainsim does not call: write "
             "it at the script's top level");
      }
    }
    if (i_ >= t_.size()) fail(line, "this function has no closing }");
    ++i_;
  }

  // The tokens of an if's or elif's test, up to its `then` (which starts a command).
  std::vector<Token> test_tokens(int line) {
    std::vector<Token> out;
    while (i_ < t_.size()) {
      const Token& t = t_[i_++];
      const bool at_start = out.empty() || out.back().kind == TokenKind::kSemicolon ||
                            out.back().kind == TokenKind::kNewline;
      if (bare_word(t) == "then" && at_start) {
        while (!out.empty() && ends_command(out.back().kind)) out.pop_back();
        return out;
      }
      out.push_back(t);
    }
    fail(line, "this if has no then");
  }

  void open_branch(int line) {
    const bool outer_runs = mode() == Arm::kRun;
    const std::vector<Token> test = test_tokens(line);
    const bool runs = outer_runs && decide(test_status(test, vars_), line);
    branches_.push_back({runs ? Arm::kRun : Arm::kSkip, runs || !outer_runs, line});
  }

  void next_arm(int line, bool has_test) {
    if (branches_.empty()) fail(line, "elif or else without if");
    const std::vector<Token> test = has_test ? test_tokens(line) : std::vector<Token>{};
    const bool outer_runs = mode(branches_.size() - 1) == Arm::kRun;
    Branch& b = branches_.back();
    const bool runs =
        outer_runs && !b.taken && (!has_test || decide(test_status(test, vars_), line));
    b.arm = runs ? Arm::kRun : Arm::kSkip;
    b.taken = b.taken || runs;
  }

  // NAME=value or NAME=( elements ): kept where the command runs; refused where that is unknown.
  void assign(const Token& word, Arm m) {
    Assignment a = split_assignment(word);
    std::vector<std::string> values;
    bool unknown = false;
    if (a.value.parts.empty() && i_ < t_.size() && t_[i_].kind == TokenKind::kOpen) {
      for (++i_; i_ < t_.size() && t_[i_].kind != TokenKind::kClose; ++i_) {
        if (t_[i_].kind == TokenKind::kNewline) continue;
        if (t_[i_].kind != TokenKind::kWord) fail(t_[i_].line, "unexpected " + t_[i_].text);
        Expansion e = vars_.expand(t_[i_], true);
        unknown = unknown || e.unknown;
        for (auto& w : e.words) values.push_back(std::move(w));
      }
      if (i_ >= t_.size()) fail(word.line, a.name + "=( has no closing )");
      ++i_;
    } else {
      Expansion e = vars_.expand(a.value, false);
      values = std::move(e.words);
      unknown = e.unknown;
    }
    if (m == Arm::kRun) vars_.set(a.name, std::move(values), a.append, unknown);
  }

  void simple_command(bool runs) {
    const Arm m = runs ? Arm::kRun : Arm::kSkip;
    const std::size_t begin = i_;
    std::vector<const Token*> words;
    bool declaring = false;  // export / declare / local: the rest are assignments or names
    while (i_ < t_.size() && !ends_command(t_[i_].kind)) {
      const Token& t = t_[i_++];
      if (t.kind == TokenKind::kRedirect) {
        if (t.takes_target && i_ < t_.size() && t_[i_].kind == TokenKind::kWord) ++i_;
        continue;
      }
      if (t.kind != TokenKind::kWord) {
        fail(t.line, "a subshell or function ( ... ) is more shell than trainsim reads");
      }
      const std::string k = bare_word(t);
      if (words.empty() && (is_assignment(t) || declaring)) {
        if (is_assignment(t)) assign(t, m);
        continue;
      }
      if (words.empty() &&
          (k == "export" || k == "declare" || k == "local" || k == "readonly" || k == "typeset")) {
        declaring = true;
        continue;
      }
      words.push_back(&t);
    }
    if (m == Arm::kSkip) return;  // the list's status stays that of the commands before
    status_ = Truth::kTrue;       // assignments alone
    if (words.empty()) return;
    const std::string first = bare_word(*words[0]);
    if (first == "exit") {  // the script ends here: no launch after it
      exited_ = true;
      return;
    }
    if (is_test_command(first)) {
      status_ = test_status(std::vector<Token>(t_.begin() + static_cast<std::ptrdiff_t>(begin),
                                               t_.begin() + static_cast<std::ptrdiff_t>(i_)),
                            vars_);
      return;
    }
    status_ = Truth::kTrue;  // a command is taken to succeed: the path a launch is written for
    std::vector<std::string> command;
    for (const Token* w : words) {
      for (auto& field : vars_.expand(*w, true).words) command.push_back(std::move(field));
    }
    const bool prints = !command.empty() && (command[0] == "echo" || command[0] == "printf");
    const bool launches =
        !prints && std::any_of(command.begin(), command.end(),
                               [](const std::string& w) { return w.ends_with(".py"); });
    if (!result_.first) result_.first = command;
    if (launches) result_.launch = std::move(command);
  }
};

}  // namespace

ScriptLaunch read_launch_script(std::string_view text, const std::string& where) {
  const std::vector<Token> tokens = lex_shell(text, where);
  // Every way the undecided tests could go, up to the first kMaxUndecided of them (bit k: the
  // k-th such test the run meets); a way whose script ends (exit) before it launches is no run.
  struct Way {
    std::uint32_t mask;
    Script::Result result;
  };
  std::vector<Way> ways{{0, Script(tokens, where, 0).run()}};
  std::size_t most = ways[0].result.undecided.size();
  for (std::uint32_t mask = 1; mask < (1U << std::min(most, kMaxUndecided)); ++mask) {
    ways.push_back({mask, Script(tokens, where, mask).run()});
    most = std::max(most, ways.back().result.undecided.size());
  }
  ScriptLaunch out;
  std::set<int> lines;
  const Way* base = nullptr;
  for (const Way& w : ways) {
    lines.insert(w.result.undecided.begin(), w.result.undecided.end());
    if (!base && w.result.launch) base = &w;
  }
  out.undecided_lines.assign(lines.begin(), lines.end());
  if (!base) {
    out.words = ways[0].result.first.value_or(std::vector<std::string>{});
    return out;
  }
  out.words = *base->result.launch;
  for (const Way& w : ways) {
    if (!w.result.launch || *w.result.launch == out.words) continue;
    const auto seen = std::find_if(out.alternatives.begin(), out.alternatives.end(),
                                   [&](const auto& a) { return a.words == *w.result.launch; });
    if (seen != out.alternatives.end()) continue;
    ScriptLaunch::Alternative a{*w.result.launch, {}};
    const auto& met = w.result.undecided;
    for (std::size_t k = 0; k < met.size() && k < 32; ++k) {
      if ((((w.mask ^ base->mask) >> k) & 1U) != 0) a.lines.push_back(met[k]);
    }
    out.alternatives.push_back(std::move(a));
  }
  return out;
}

}  // namespace trainsim
