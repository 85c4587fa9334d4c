#pragma once
// Internal to sim/plan/launch_script: a shell script cut into bash's tokens. A word keeps its
// quoting as segments (unquoted, '...', "..."), so that expansion can split and join as bash does;
// $(...), $((...)), ${...} and `...` stay whole inside their segment, nested quotes and all.
#include <string>
#include <string_view>
#include <vector>

namespace trainsim {

enum class Quote { kNone, kSingle, kDouble };

struct WordPart {
  Quote quote;
  std::string text;  // in "..." an escaped $ is kept as kLiteralDollar
};

inline constexpr char kLiteralDollar = '\x01';

enum class TokenKind {
  kWord,
  kNewline,
  kSemicolon,  // ;
  kAnd,        // &&
  kOr,         // ||
  kPipe,       // |
  kAmpersand,  // &
  kOpen,       // (
  kClose,      // )
  kRedirect,   // >, >>, <, 2>, &>, 2>&1 (with its &N target where it has one)
};

struct Token {
  TokenKind kind;
  std::vector<WordPart> parts;  // kWord
  std::string text;             // the word or operator as written
  int line = 1;
  /// A redirection whose target is the next word (not written into it: "> log", not "2>&1").
  bool takes_target = false;
};

/// The script's tokens: backslash-newlines joined, # comments (at a word's start) dropped.
/// InputError at `where` for an unclosed quote or substitution.
std::vector<Token> lex_shell(std::string_view text, const std::string& where);

/// The word's text as written, quotes removed and nothing expanded (a keyword's test).
std::string plain_text(const Token& word);
/// A word written bare, no quotes (else ""): how keywords and test operators are recognised.
std::string bare_word(const Token& t);
/// Whether the token ends a command (newline, ;, &&, ||, |, &).
bool ends_command(TokenKind k);

}  // namespace trainsim
