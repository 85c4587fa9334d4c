// A launch script's words expanded from its variables, as bash expands them; what comes from
// outside the script kept as written.
#include "sim/plan/shell_expand.hpp"

#include <cctype>
#include <optional>

#include "sim/core/error.hpp"

namespace trainsim {

namespace {

bool name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Just past the bracket that closes the one at `open_at`, quotes inside skipped; npos if none.
std::size_t past_close(std::string_view s, std::size_t open_at) {
  const char open = s[open_at];
  const char close = open == '(' ? ')' : '}';
  int depth = 0;
  for (std::size_t j = open_at; j < s.size(); ++j) {
    if (s[j] == '\'' || s[j] == '"') {
      j = s.find(s[j], j + 1);
      if (j == std::string_view::npos) return j;
    } else if (s[j] == open) {
      ++depth;
    } else if (s[j] == close && --depth == 0) {
      return j + 1;
    }
  }
  return std::string_view::npos;
}

// $((...)): integers, + - * / % and parentheses, variables by name with or without $.
class Arithmetic {
 public:
  Arithmetic(std::string_view s, const std::map<std::string, std::vector<std::string>>& vars)
      : s_(s), vars_(vars) {}
  std::optional<long long> value() {
    auto v = sum();
    skip();
    return pos_ == s_.size() ? v : std::nullopt;
  }

 private:
  std::string_view s_;
  const std::map<std::string, std::vector<std::string>>& vars_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  static constexpr int kMaxDepth = 64;

  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool take(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  std::optional<long long> number(const std::string& text) const {
    if (text.empty() || text.size() > 18) return std::nullopt;
    for (char c : text) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    }
    return std::stoll(text);
  }
  std::optional<long long> atom() {
    skip();
    if (take('(')) {
      if (++depth_ > kMaxDepth) return std::nullopt;  // no stack for ((((...
      auto v = sum();
      --depth_;
      return take(')') ? v : std::nullopt;
    }
    if (take('-')) {
      auto v = atom();
      return v ? std::optional<long long>(-*v) : std::nullopt;
    }
    const bool dollar = take('$');
    const bool brace = dollar && take('{');
    const std::size_t begin = pos_;
    while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
    const std::string word(s_.substr(begin, pos_ - begin));
    if (brace && !take('}')) return std::nullopt;
    if (word.empty()) return std::nullopt;
    if (!name_start(word[0])) return dollar ? std::nullopt : number(word);
    const auto it = vars_.find(word);
    return it == vars_.end() || it->second.empty() ? std::nullopt : number(it->second[0]);
  }
  std::optional<long long> product() {
    auto v = atom();
    while (v) {
      const char op = (skip(), pos_ < s_.size() ? s_[pos_] : '\0');
      if (op != '*' && op != '/' && op != '%') break;
      ++pos_;
      const auto r = atom();
      if (!r || (op != '*' && *r == 0)) return std::nullopt;
      v = op == '*' ? *v * *r : op == '/' ? *v / *r : *v % *r;
    }
    return v;
  }
  std::optional<long long> sum() {
    auto v = product();
    while (v) {
      const char op = (skip(), pos_ < s_.size() ? s_[pos_] : '\0');
      if (op != '+' && op != '-') break;
      ++pos_;
      const auto r = product();
      if (!r) return std::nullopt;
      v = op == '+' ? *v + *r : *v - *r;
    }
    return v;
  }
};

}  // namespace

// The fields of one word: text joined into the current field, unquoted expansions split at
// whitespace, "${A[@]}" a field per element.
class WordBuilder {
 public:
  explicit WordBuilder(const ShellVariables& vars)
      : vars_(vars.vars_), unknown_vars_(vars.unknown_), shell_(vars) {}

  void part(const WordPart& p, bool split) {
    if (p.quote == Quote::kSingle) return literal(p.text);
    started_ = started_ || p.quote == Quote::kDouble;
    expand_text(p.text, split && p.quote == Quote::kNone, p.quote == Quote::kDouble);
  }
  Expansion finish(bool split) {
    next_field();
    if (!split) {
      std::string joined;
      for (std::size_t k = 0; k < out_.words.size(); ++k) joined += (k ? " " : "") + out_.words[k];
      out_.words = {joined};
    }
    return std::move(out_);
  }

 private:
  const std::map<std::string, std::vector<std::string>>& vars_;
  const std::set<std::string>& unknown_vars_;
  const ShellVariables& shell_;
  Expansion out_;
  std::string field_;
  bool started_ = false;

  std::size_t size_ = 0;

  void grow(std::size_t n) {
    size_ += n;
    if (size_ > ShellVariables::kMaxExpansion) {
      fail_input(shell_.where_, "a word expands beyond " +
                                    std::to_string(ShellVariables::kMaxExpansion) + " characters");
    }
  }
  void literal(std::string_view s) {
    grow(s.size());
    field_ += s;
    started_ = true;
  }
  void next_field() {
    if (started_) out_.words.push_back(field_);
    field_.clear();
    started_ = false;
  }
  void fields(std::string_view s, bool split) {
    if (!split) return literal(s);
    for (char c : s) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        next_field();
      } else {
        grow(1);
        field_ += c;
        started_ = true;
      }
    }
  }
  void unknown(std::string_view raw) {
    out_.unknown = true;
    literal(raw);
  }
  const std::vector<std::string>* lookup(const std::string& name) {
    const auto it = vars_.find(name);
    if (it == vars_.end()) return nullptr;
    out_.unknown = out_.unknown || unknown_vars_.contains(name);
    return &it->second;
  }

  void expand_text(std::string_view s, bool split, bool quoted) {
    for (std::size_t i = 0; i < s.size();) {
      const char c = s[i];
      const char next = i + 1 < s.size() ? s[i + 1] : '\0';
      if (c == kLiteralDollar) {
        literal("$");
        ++i;
      } else if (c == '$' && (next == '(' || next == '{')) {
        const std::size_t end = past_close(s, i + 1);
        const std::string_view raw = s.substr(i, end == std::string_view::npos ? end : end - i);
        if (next == '{' && end != std::string_view::npos) {
          braced(raw.substr(2, raw.size() - 3), raw, split, quoted);
        } else if (raw.starts_with("$((") && raw.ends_with("))")) {
          const auto v = Arithmetic(raw.substr(3, raw.size() - 5), vars_).value();
          v ? literal(std::to_string(*v)) : unknown(raw);
        } else {
          unknown(raw);
        }
        i = end == std::string_view::npos ? s.size() : end;
      } else if (c == '$' && name_start(next)) {
        std::size_t end = i + 1;
        while (end < s.size() && name_char(s[end])) ++end;
        const std::string name(s.substr(i + 1, end - i - 1));
        const auto* values = lookup(name);
        values ? fields(values->empty() ? "" : (*values)[0], split) : unknown(s.substr(i, end - i));
        i = end;
      } else if (c == '$' && next != '\0' &&
                 (std::isdigit(static_cast<unsigned char>(next)) ||
                  std::string_view("@*#?$!-").find(next) != std::string_view::npos)) {
        unknown(s.substr(i, 2));
        i += 2;
      } else if (c == '`') {
        const std::size_t close = s.find('`', i + 1);
        const std::size_t end = close == std::string_view::npos ? s.size() : close + 1;
        unknown(s.substr(i, end - i));
        i = end;
      } else {
        literal(s.substr(i, 1));
        ++i;
      }
    }
  }

  // ${inner}: a variable, an array's elements or one of them, or a default where unset.
  void braced(std::string_view inner, std::string_view raw, bool split, bool quoted) {
    std::size_t n = 0;
    while (n < inner.size() && name_char(inner[n])) ++n;
    const std::string name(inner.substr(0, n));
    const std::string_view rest = inner.substr(n);
    if (name.empty()) return unknown(raw);  // ${#A[@]}, ${!A}, ${@}
    // A positional parameter ($1, ...) is the caller's: unset here, so only a default gives it.
    const bool positional = std::isdigit(static_cast<unsigned char>(name[0])) != 0;
    for (char c : name) {
      if (positional && !std::isdigit(static_cast<unsigned char>(c))) return unknown(raw);
    }
    const auto* values = positional ? nullptr : lookup(name);
    if (rest.starts_with("[") && rest.ends_with("]")) {
      const std::string_view index = rest.substr(1, rest.size() - 2);
      // An unset array is empty: arrays are never inherited from the environment.
      if (!values && (index == "@" || index == "*")) return;
      if (!values) return unknown(raw);
      if (index == "@" || index == "*") return elements(*values, split, quoted && index == "@");
      const auto k = Arithmetic(index, vars_).value();
      if (!k || *k < 0) return unknown(raw);
      return fields(static_cast<std::size_t>(*k) < values->size() ? (*values)[*k] : "", split);
    }
    const std::string value = values && !values->empty() ? (*values)[0] : "";
    if (rest.empty()) return values ? fields(value, split) : unknown(raw);
    const bool colon = rest[0] == ':';
    const std::string_view op = rest.substr(colon ? 1 : 0, 1);
    const bool unset = !values || (colon && value.empty());
    if (op == "-" || op == "=") {
      if (!unset) return fields(value, split);
      return default_word(rest.substr(colon ? 2 : 1), split && !quoted);
    }
    if (op == "+") return unset ? void() : default_word(rest.substr(colon ? 2 : 1), split);
    unknown(raw);  // patterns, substrings, case changes
  }
  void elements(const std::vector<std::string>& values, bool split, bool each_a_field) {
    for (std::size_t k = 0; k < values.size(); ++k) {
      if (k > 0 && (each_a_field || split)) next_field();
      if (k > 0 && !each_a_field && !split) field_ += ' ';
      each_a_field ? literal(values[k]) : fields(values[k], split);
    }
  }
  void default_word(std::string_view text, bool split) {
    // ${A:-${B:-${C:-...}}}: each level expands the next; past a few dozen, left as written.
    static thread_local int depth = 0;
    if (depth >= 32) return unknown(text);
    ++depth;
    struct Leave {
      ~Leave() { --depth; }
    } leave;
    std::string joined;
    bool first = true;
    for (const Token& t : lex_shell(text, "${...}")) {
      if (t.kind != TokenKind::kWord) continue;
      const Expansion e = shell_.expand(t, false);
      out_.unknown = out_.unknown || e.unknown;
      joined += (first ? "" : " ") + e.words[0];
      first = false;
    }
    fields(joined, split);
  }
};

Expansion ShellVariables::expand(const Token& word, bool split) const {
  WordBuilder b(*this);
  for (const auto& part : word.parts) b.part(part, split);
  return b.finish(split);
}

void ShellVariables::set(const std::string& name, std::vector<std::string> values, bool append,
                         bool unknown) {
  if (unknown) unknown_.insert(name);
  if (!unknown && !append) unknown_.erase(name);
  auto& v = vars_[name];
  std::size_t size = 0;
  for (const auto& x : v) size += append ? x.size() + 1 : 0;
  for (const auto& x : values) size += x.size() + 1;
  if (size > kMaxExpansion) {
    fail_input(where_, name + " grows beyond " + std::to_string(kMaxExpansion) + " characters");
  }
  if (!append) {
    v = std::move(values);
  } else if (values.size() == 1 && v.size() <= 1) {  // NAME+=text: the string grows
    v = {(v.empty() ? "" : v[0]) + values[0]};
  } else {
    v.insert(v.end(), values.begin(), values.end());
  }
}

bool is_assignment(const Token& word) {
  if (word.kind != TokenKind::kWord || word.parts.empty() || word.parts[0].quote != Quote::kNone) {
    return false;
  }
  const std::string& t = word.parts[0].text;
  const std::size_t eq = t.find('=');
  if (eq == std::string::npos || eq == 0 || !name_start(t[0])) return false;
  const std::size_t end = t[eq - 1] == '+' ? eq - 1 : eq;
  for (std::size_t k = 0; k < end; ++k) {
    if (!name_char(t[k])) return false;
  }
  return end > 0;
}

Assignment split_assignment(const Token& word) {
  const std::string& t = word.parts[0].text;
  const std::size_t eq = t.find('=');
  const bool append = t[eq - 1] == '+';
  Assignment a{t.substr(0, append ? eq - 1 : eq), append,
               Token{TokenKind::kWord, {}, {}, word.line}};
  if (eq + 1 < t.size()) a.value.parts.push_back({Quote::kNone, t.substr(eq + 1)});
  a.value.parts.insert(a.value.parts.end(), word.parts.begin() + 1, word.parts.end());
  return a;
}

}  // namespace trainsim
