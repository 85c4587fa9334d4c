// Bash's tokens of a launch script: words with their quoting, and the operators that end a
// command (newline, ;, &&, ||, |, &), group one ((, )) or redirect it.
#include "sim/plan/shell_lexer.hpp"

#include <algorithm>
#include <cctype>

#include "sim/core/error.hpp"

namespace trainsim {

namespace {

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& where) : s_(text), where_(where) {}

  std::vector<Token> run() {
    while (i_ < s_.size()) step();
    flush();
    return std::move(out_);
  }

 private:
  std::string_view s_;
  const std::string& where_;
  std::vector<Token> out_;
  Token word_{TokenKind::kWord, {}, {}, 1};
  bool in_word_ = false;
  std::size_t i_ = 0;
  int line_ = 1;

  [[noreturn]] void fail(const std::string& what) const {
    fail_input(where_, "line " + std::to_string(line_) + ": " + what);
  }
  char at(std::size_t k) const { return k < s_.size() ? s_[k] : '\0'; }

  // A here-document (<< WORD): its delimiter, once the word after << is read; its lines are
  // skipped from the next newline on.
  bool heredoc_next_ = false;
  std::string heredoc_;

  void flush() {
    if (in_word_ && heredoc_next_) {
      for (const auto& part : word_.parts) heredoc_ += part.text;
      heredoc_next_ = false;
    }
    if (in_word_) out_.push_back(std::move(word_));
    word_ = Token{TokenKind::kWord, {}, {}, line_};
    in_word_ = false;
  }
  void skip_heredoc() {
    while (!heredoc_.empty() && i_ < s_.size()) {
      const std::size_t end = std::min(s_.find('\n', i_), s_.size());
      std::string_view text = s_.substr(i_, end - i_);
      while (!text.empty() && text.front() == '\t') text.remove_prefix(1);  // <<-
      i_ = end + 1;
      ++line_;
      if (text == heredoc_) heredoc_.clear();
    }
    heredoc_.clear();
  }
  void append(Quote q, std::string_view text) {
    if (!in_word_) word_.line = line_;
    if (word_.parts.empty() || word_.parts.back().quote != q) word_.parts.push_back({q, {}});
    word_.parts.back().text += text;
    word_.text += text;
    in_word_ = true;
    line_ += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  void op(TokenKind kind, std::string text, std::size_t length) {
    flush();
    out_.push_back(Token{kind, {}, std::move(text), line_});
    i_ += length;
  }

  // From a $( or ${ at `k` to just past its closing bracket, quotes inside skipped.
  std::size_t past_substitution(std::size_t k) const {
    const char open = s_[k + 1];
    const char close = open == '(' ? ')' : '}';
    int depth = 0;
    for (std::size_t j = k + 1; j < s_.size(); ++j) {
      const char c = s_[j];
      if (c == '\\') {
        ++j;
      } else if (c == '\'') {
        j = s_.find('\'', j + 1);
        if (j == std::string_view::npos) break;
      } else if (c == '"') {
        for (++j; j < s_.size() && s_[j] != '"'; ++j) j += s_[j] == '\\' ? 1 : 0;
      } else if (c == open) {
        ++depth;
      } else if (c == close && --depth == 0) {
        return j + 1;
      }
    }
    fail(std::string("unclosed $") + open);
  }
  // A substitution or a backquoted command at i_, kept whole in a part of quoting `q`.
  bool substitution(Quote q) {
    if (s_[i_] == '$' && (at(i_ + 1) == '(' || at(i_ + 1) == '{')) {
      const std::size_t end = past_substitution(i_);
      append(q, s_.substr(i_, end - i_));
      i_ = end;
      return true;
    }
    if (s_[i_] == '`') {
      const std::size_t close = s_.find('`', i_ + 1);
      if (close == std::string_view::npos) fail("unclosed `");
      append(q, s_.substr(i_, close + 1 - i_));
      i_ = close + 1;
      return true;
    }
    return false;
  }

  void double_quoted() {
    ++i_;
    append(Quote::kDouble, "");
    while (i_ < s_.size() && s_[i_] != '"') {
      const char c = s_[i_];
      if (c == '\\' && std::string_view("\"\\$`\n").find(at(i_ + 1)) != std::string_view::npos &&
          at(i_ + 1) != '\0') {
        const char next = s_[i_ + 1];
        if (next == '\n') ++line_;
        if (next != '\n')
          append(Quote::kDouble, std::string(1, next == '$' ? kLiteralDollar : next));
        i_ += 2;
      } else if (!substitution(Quote::kDouble)) {
        append(Quote::kDouble, std::string(1, c));
        ++i_;
      }
    }
    if (i_ >= s_.size()) fail("unclosed \"");
    ++i_;
  }

  // >, >>, <, N>, &>, >&N: the word before it a file descriptor where it is digits alone.
  void redirect() {
    std::string text;
    if (in_word_ && word_.parts.size() == 1 && word_.parts[0].quote == Quote::kNone &&
        std::all_of(word_.text.begin(), word_.text.end(), [](char c) { return std::isdigit(c); })) {
      text = word_.text;
      in_word_ = false;
    }
    flush();
    std::size_t j = i_;
    if (s_[j] == '&') text += s_[j++];
    text += s_[j++];
    if (at(j) == s_[j - 1]) text += s_[j++];  // >> or <<
    if (text.ends_with("<<")) {
      if (at(j) == '-') text += s_[j++];
      heredoc_next_ = true;
    }
    bool inline_target = false;
    if (at(j) == '&') {
      text += s_[j++];
      while (std::isdigit(static_cast<unsigned char>(at(j))) || at(j) == '-') text += s_[j++];
      inline_target = true;
    }
    out_.push_back(Token{TokenKind::kRedirect, {}, text, line_, !inline_target});
    i_ = j;
  }

  void step() {
    const char c = s_[i_];
    const char next = at(i_ + 1);
    if (c == '\\' && (next == '\n' || (next == '\r' && at(i_ + 2) == '\n'))) {
      i_ += next == '\n' ? 2 : 3;
      ++line_;
    } else if (c == '\\' && next != '\0') {
      append(Quote::kSingle, std::string(1, next));  // an escaped character is literal
      i_ += 2;
    } else if (c == '#' && !in_word_) {
      while (i_ < s_.size() && s_[i_] != '\n') ++i_;
    } else if (c == '\n') {
      op(TokenKind::kNewline, "\n", 1);
      ++line_;
      skip_heredoc();
    } else if (c == ' ' || c == '\t' || c == '\r') {
      flush();
      ++i_;
    } else if (c == ';') {
      op(TokenKind::kSemicolon, ";", 1);
    } else if (c == '|') {
      next == '|' ? op(TokenKind::kOr, "||", 2) : op(TokenKind::kPipe, "|", 1);
    } else if (c == '&' && next == '&') {
      op(TokenKind::kAnd, "&&", 2);
    } else if ((c == '&' && next == '>') || c == '>' || c == '<') {
      redirect();
    } else if (c == '&') {
      op(TokenKind::kAmpersand, "&", 1);
    } else if (c == '(' || c == ')') {
      op(c == '(' ? TokenKind::kOpen : TokenKind::kClose, std::string(1, c), 1);
    } else if (c == '\'') {
      const std::size_t close = s_.find('\'', i_ + 1);
      if (close == std::string_view::npos) fail("unclosed '");
      append(Quote::kSingle, s_.substr(i_ + 1, close - i_ - 1));
      i_ = close + 1;
    } else if (c == '"') {
      double_quoted();
    } else if (!substitution(Quote::kNone)) {
      append(Quote::kNone, std::string(1, c));
      ++i_;
    }
  }
};

}  // namespace

std::vector<Token> lex_shell(std::string_view text, const std::string& where) {
  return Lexer(text, where).run();
}

std::string plain_text(const Token& word) {
  std::string out;
  for (const auto& part : word.parts) {
    for (char c : part.text) out += c == kLiteralDollar ? '$' : c;
  }
  return out;
}

std::string bare_word(const Token& t) {
  return t.kind == TokenKind::kWord && t.parts.size() == 1 && t.parts[0].quote == Quote::kNone
             ? t.parts[0].text
             : "";
}

bool ends_command(TokenKind k) {
  return k == TokenKind::kNewline || k == TokenKind::kSemicolon || k == TokenKind::kAnd ||
         k == TokenKind::kOr || k == TokenKind::kPipe || k == TokenKind::kAmpersand;
}

}  // namespace trainsim
