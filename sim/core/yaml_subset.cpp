#include "sim/core/yaml_subset.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/core/error.hpp"

namespace trainsim {

namespace {

constexpr int kMaxDepth = 64;

struct Line {
  std::size_t indent = 0;
  std::string text;  // without the indentation and a trailing comment
  int number = 0;
};

// `s` without a comment that starts at a '#' outside quotes after a space (or at the start).
std::string without_comment(const std::string& s) {
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ')) {
      return s.substr(0, i);
    }
  }
  return s;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  std::size_t first = 0;
  while (first < s.size() && s[first] == ' ') ++first;
  return s.substr(first);
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : file_(file) { split(text); }

  nlohmann::json document() {
    if (lines_.empty()) return nullptr;
    nlohmann::json j = block(lines_[0].indent, 0);
    if (at_ < lines_.size()) fail(lines_[at_], "is indented less than the line it follows");
    return j;
  }

 private:
  const std::string& file_;
  std::vector<Line> lines_;
  std::size_t at_ = 0;

  [[noreturn]] void fail(const Line& l, const std::string& what) const {
    fail_input(file_ + ": line " + std::to_string(l.number), what);
  }

  void split(std::string_view text) {
    int number = 0;
    std::size_t from = 0;
    while (from <= text.size()) {
      const std::size_t end = std::min(text.find('\n', from), text.size());
      Line l;
      l.number = ++number;
      std::string raw(text.substr(from, end - from));
      from = end + 1;
      while (l.indent < raw.size() && raw[l.indent] == ' ') ++l.indent;
      if (l.indent < raw.size() && raw[l.indent] == '\t') fail(l, "indents with a tab");
      l.text = trimmed(without_comment(raw.substr(l.indent)));
      if (l.text.empty() || l.text == "---" || l.text == "...") continue;
      if (l.text.starts_with("%")) fail(l, "holds a YAML directive, which is not read");
      lines_.push_back(std::move(l));
    }
  }

  static bool is_item(const std::string& t) { return t == "-" || t.starts_with("- "); }

  // The block of lines at `indent` from the current line: a sequence or a mapping.
  nlohmann::json block(std::size_t indent, int depth) {
    if (depth > kMaxDepth) fail(lines_[at_], "nests deeper than " + std::to_string(kMaxDepth));
    return is_item(lines_[at_].text) ? sequence(indent, depth) : mapping(indent, depth);
  }

  // What follows a key or a dash with nothing after it: a more indented block, a sequence at the
  // key's own indentation (PyYAML writes them so), or null.
  nlohmann::json nested(std::size_t indent, bool after_key, int depth) {
    if (at_ >= lines_.size()) return nullptr;
    const Line& next = lines_[at_];
    if (next.indent > indent) return block(next.indent, depth + 1);
    if (after_key && next.indent == indent && is_item(next.text)) {
      return sequence(indent, depth + 1);
    }
    return nullptr;
  }

  nlohmann::json sequence(std::size_t indent, int depth) {
    nlohmann::json list = nlohmann::json::array();
    while (at_ < lines_.size() && lines_[at_].indent == indent && is_item(lines_[at_].text)) {
      Line& l = lines_[at_];
      if (l.text == "-") {
        ++at_;
        list.push_back(nested(indent, false, depth));
        continue;
      }
      // The item's own text as a line of its own, indented where it starts.
      std::size_t skip = 1;
      while (skip < l.text.size() && l.text[skip] == ' ') ++skip;
      l.indent += skip;
      l.text = l.text.substr(skip);
      if (is_item(l.text) || key_end(l) != std::string::npos) {
        list.push_back(block(l.indent, depth + 1));
      } else {
        ++at_;
        list.push_back(scalar(l.text, l));
      }
    }
    return list;
  }

  // Where the key of a "key: value" line ends (at its colon), or npos.
  std::size_t key_end(const Line& l) const {
    const std::string& t = l.text;
    std::size_t i = 0;
    if (!t.empty() && (t[0] == '\'' || t[0] == '"')) {
      i = t.find(t[0], 1);
      if (i == std::string::npos) return std::string::npos;
      ++i;
    }
    if (!t.empty() && (t[0] == '[' || t[0] == '{')) return std::string::npos;
    for (; i < t.size(); ++i) {
      if (t[i] == ':' && (i + 1 == t.size() || t[i + 1] == ' ')) return i;
    }
    return std::string::npos;
  }

  nlohmann::json mapping(std::size_t indent, int depth) {
    nlohmann::json map = nlohmann::json::object();
    while (at_ < lines_.size() && lines_[at_].indent == indent && !is_item(lines_[at_].text)) {
      const Line l = lines_[at_++];
      const std::size_t colon = key_end(l);
      if (colon == std::string::npos) {
        fail(l,
             "is neither 'key: value' nor '- item' (a scalar over several lines, or a "
             "mapping where a sequence is, is not read)");
      }
      const std::string key = unquoted(trimmed(l.text.substr(0, colon)), l);
      const std::string value = trimmed(l.text.substr(colon + 1));
      map[key] = value.empty() ? nested(indent, true, depth) : scalar(value, l);
    }
    if (at_ < lines_.size() && lines_[at_].indent > indent) {
      fail(lines_[at_], "is indented more than its mapping's keys");
    }
    return map;
  }

  std::string unquoted(const std::string& s, const Line& l) const {
    if (s.size() >= 2 && s.front() == '\'' && s.back() == '\'') {
      std::string out;
      for (std::size_t i = 1; i + 1 < s.size(); ++i) {
        out += s[i];
        if (s[i] == '\'' && s[i + 1] == '\'') ++i;  // '' is a quote
      }
      return out;
    }
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
      std::string out;
      for (std::size_t i = 1; i + 1 < s.size(); ++i) {
        if (s[i] != '\\') {
          out += s[i];
          continue;
        }
        const char e = s[++i];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      }
      return out;
    }
    if (!s.empty() && (s.front() == '\'' || s.front() == '"')) fail(l, "has an unclosed quote");
    return s;
  }

  nlohmann::json scalar(const std::string& s, const Line& l) const {
    if (s.front() == '&' || s.front() == '*' || s.front() == '!') {
      fail(l, "uses an anchor, alias or tag ('" + s.substr(0, 20) + "'), which is not read");
    }
    if (s.front() == '|' || s.front() == '>') fail(l, "starts a block scalar, which is not read");
    if (s.front() == '[' || s.front() == '{') return flow(s, l);
    if (s.front() == '\'' || s.front() == '"') return unquoted(s, l);
    if (s == "null" || s == "Null" || s == "NULL" || s == "~") return nullptr;
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
    std::int64_t i = 0;
    const char* end = s.data() + s.size();
    if (auto r = std::from_chars(s.data(), end, i); r.ec == std::errc() && r.ptr == end) return i;
    double d = 0;
    if (auto r = std::from_chars(s.data(), end, d);
        r.ec == std::errc() && r.ptr == end && std::isfinite(d)) {
      return d;
    }
    return s;
  }

  // A flow list or map of scalars on one line: [a, b], {k: v}, [] or {}.
  nlohmann::json flow(const std::string& s, const Line& l) const {
    const bool list = s.front() == '[';
    if (s.back() != (list ? ']' : '}')) fail(l, "has a flow collection not closed on its line");
    const std::string inner = trimmed(s.substr(1, s.size() - 2));
    nlohmann::json out = list ? nlohmann::json::array() : nlohmann::json::object();
    if (inner.empty()) return out;
    if (inner.find_first_of("[]{}") != std::string::npos) fail(l, "nests flow collections");
    std::size_t from = 0;
    while (from <= inner.size()) {
      const std::size_t comma = std::min(inner.find(',', from), inner.size());
      const std::string item = trimmed(inner.substr(from, comma - from));
      from = comma + 1;
      if (item.empty()) fail(l, "has an empty item in a flow collection");
      if (list) {
        out.push_back(scalar(item, l));
        continue;
      }
      const std::size_t colon = item.find(": ");
      if (colon == std::string::npos) fail(l, "has a flow map item without 'key: value'");
      out[unquoted(trimmed(item.substr(0, colon)), l)] = scalar(trimmed(item.substr(colon + 2)), l);
    }
    return out;
  }
};

}  // namespace

nlohmann::json parse_yaml_subset(std::string_view text, const std::string& file) {
  return Parser(text, file).document();
}

}  // namespace trainsim
