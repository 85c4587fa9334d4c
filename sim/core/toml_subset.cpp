#include "sim/core/toml_subset.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "sim/core/error.hpp"

namespace trainsim {

namespace {

constexpr int kMaxDepth = 64;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_bare_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  nlohmann::json document() {
    nlohmann::json root = nlohmann::json::object();
    nlohmann::json* table = &root;
    while (true) {
      skip_blank_lines();
      if (at_end()) return root;
      if (peek() == '[') {
        table = &header(root);
      } else {
        key_value(*table);
      }
      end_of_line();
    }
  }

 private:
  std::string_view text_;
  const std::string& file_;
  std::size_t at_ = 0;
  int line_ = 1;
  std::set<std::string> headers_;  // tables opened by a header, as dotted paths

  [[noreturn]] void fail(const std::string& what) const {
    fail_input(file_ + ": line " + std::to_string(line_), what);
  }

  bool at_end() const { return at_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[at_]; }
  bool looking_at(std::string_view s) const { return text_.substr(at_, s.size()) == s; }

  void skip_spaces() {
    while (!at_end() && (peek() == ' ' || peek() == '\t')) ++at_;
  }

  void skip_comment() {
    if (peek() != '#') return;
    while (!at_end() && peek() != '\n') ++at_;
  }

  void newline() {
    if (peek() == '\r') ++at_;
    if (peek() != '\n') fail("has a carriage return that does not end the line");
    ++at_;
    ++line_;
  }

  // Blank and comment lines, between statements and inside an array.
  void skip_blank_lines() {
    while (true) {
      skip_spaces();
      skip_comment();
      if (at_end() || (peek() != '\n' && peek() != '\r')) return;
      newline();
    }
  }

  void end_of_line() {
    skip_spaces();
    skip_comment();
    if (at_end()) return;
    if (peek() != '\n' && peek() != '\r') {
      const std::string_view rest = text_.substr(at_, 20);
      fail("has '" + std::string(rest.substr(0, rest.find_first_of("\r\n"))) +
           "' after its value or header");
    }
    newline();
  }

  // [a.b]: the table it opens (and the tables above it), which no earlier header opened.
  nlohmann::json& header(nlohmann::json& root) {
    ++at_;
    if (peek() == '[') fail("opens an array of tables ([[...]]), which is not read");
    skip_spaces();
    const std::vector<std::string> path = key_path();
    if (peek() != ']') fail("has a table header not closed by ']'");
    ++at_;
    std::string dotted;
    for (const auto& k : path) dotted += (dotted.empty() ? "" : ".") + k;
    if (!headers_.insert(dotted).second) fail("opens table [" + dotted + "] a second time");
    return descend(root, path, path.size());
  }

  // The table at the first `n` keys of `path` under `from`, made where missing.
  nlohmann::json& descend(nlohmann::json& from, const std::vector<std::string>& path,
                          std::size_t n) {
    nlohmann::json* t = &from;
    for (std::size_t i = 0; i < n; ++i) {
      nlohmann::json& next = (*t)[path[i]];
      if (next.is_null()) next = nlohmann::json::object();
      if (!next.is_object()) fail("uses '" + path[i] + "', which holds a value, as a table");
      t = &next;
    }
    return *t;
  }

  void key_value(nlohmann::json& table) {
    const std::vector<std::string> path = key_path();
    if (peek() != '=') fail("is neither 'key = value' nor a [table] header");
    ++at_;
    skip_spaces();
    nlohmann::json& parent = descend(table, path, path.size() - 1);
    if (parent.contains(path.back())) fail("gives key '" + path.back() + "' a second time");
    parent[path.back()] = value(0);
  }

  // key or key.key..., each bare or quoted; spaces around the dots and after the last.
  std::vector<std::string> key_path() {
    std::vector<std::string> path;
    while (true) {
      skip_spaces();
      if (peek() == '"' || peek() == '\'') {
        path.push_back(string_value());
      } else {
        const std::size_t from = at_;
        while (!at_end() && is_bare_key_char(peek())) ++at_;
        if (at_ == from) fail("has no key where one is expected");
        path.emplace_back(text_.substr(from, at_ - from));
      }
      skip_spaces();
      if (peek() != '.') return path;
      ++at_;
    }
  }

  nlohmann::json value(int depth) {
    if (depth > kMaxDepth) fail("nests arrays deeper than " + std::to_string(kMaxDepth));
    const char c = peek();
    if (c == '"' || c == '\'') return string_value();
    if (c == '[') return array(depth);
    if (c == '{') fail("holds an inline table ({...}), which is not read");
    if (looking_at("true") && !is_bare_key_char(text_.size() > at_ + 4 ? text_[at_ + 4] : ' ')) {
      at_ += 4;
      return true;
    }
    if (looking_at("false") && !is_bare_key_char(text_.size() > at_ + 5 ? text_[at_ + 5] : ' ')) {
      at_ += 5;
      return false;
    }
    return number();
  }

  nlohmann::json array(int depth) {
    ++at_;
    nlohmann::json list = nlohmann::json::array();
    while (true) {
      skip_blank_lines();
      if (at_end()) fail("has an array not closed by ']'");
      if (peek() == ']') break;
      list.push_back(value(depth + 1));
      skip_blank_lines();
      if (at_end()) fail("has an array not closed by ']'");
      if (peek() == ',') {
        ++at_;
      } else if (peek() != ']') {
        fail("has array items not separated by ','");
      }
    }
    ++at_;
    return list;
  }

  std::string string_value() {
    const char quote = peek();
    if (looking_at(std::string(3, quote))) fail("holds a multi-line string, which is not read");
    ++at_;
    std::string out;
    while (true) {
      if (at_end() || peek() == '\n' || peek() == '\r') fail("has an unclosed string");
      const char c = text_[at_++];
      if (c == quote) return out;
      if (c != '\\' || quote == '\'') {
        out += c;
        continue;
      }
      const char e = at_end() ? '\0' : text_[at_++];
      switch (e) {
        case '"':
        case '\\':
          out += e;
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        default:
          fail(std::string("has the escape '\\") + e + "', which is not read");
      }
    }
  }

  // An integer or a float in decimal, '_' between digits; dates, inf, nan and other bases are not
  // read.
  nlohmann::json number() {
    const std::size_t from = at_;
    while (!at_end() &&
           (is_bare_key_char(peek()) || peek() == '.' || peek() == '+' || peek() == ':')) {
      ++at_;
    }
    const std::string raw(text_.substr(from, at_ - from));
    if (raw.empty()) fail("has no value after '='");
    std::string s;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '_') {
        s += raw[i];
        continue;
      }
      const bool between =
          i > 0 && i + 1 < raw.size() && is_digit(raw[i - 1]) && is_digit(raw[i + 1]);
      if (!between) fail("has '" + raw + "', whose '_' is not between digits");
    }
    const std::string digits = s.starts_with('+') ? s.substr(1) : s;
    const char* end = digits.data() + digits.size();
    const bool other_base = digits.size() > 1 && digits[0] == '0' &&
                            (digits[1] == 'x' || digits[1] == 'o' || digits[1] == 'b');
    std::int64_t i = 0;
    if (auto r = std::from_chars(digits.data(), end, i);
        !other_base && r.ec == std::errc() && r.ptr == end) {
      return i;
    }
    double d = 0;
    const bool decimal = digits.find_first_not_of("0123456789.eE+-") == std::string::npos;
    if (auto r = std::from_chars(digits.data(), end, d);
        decimal && r.ec == std::errc() && r.ptr == end && std::isfinite(d)) {
      return d;
    }
    fail("has '" + raw +
         "', which is not a string, boolean, decimal number or array (dates, inf, nan and "
         "other bases are not read)");
  }
};

}  // namespace

nlohmann::json parse_toml_subset(std::string_view text, const std::string& file) {
  return Parser(text, file).document();
}

}  // namespace trainsim
