#include "sim/core/json_text.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "sim/core/error.hpp"

namespace trainsim {

namespace {

std::string line_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1;
  std::size_t column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// nlohmann's explanation of a parse error without its own prefix and position ("[json.exception.
// parse_error.101] parse error at line 2, column 0: "; the caller gives the position), and with the
// bytes it quotes that are not printable ASCII written as <0xE9>: the line stays valid text.
std::string parse_error_explanation(const std::string& what) {
  std::string s = what;
  if (const auto bracket = s.find("] "); s.rfind("[json.exception.", 0) == 0 && bracket != s.npos) {
    s = s.substr(bracket + 2);
  }
  if (s.rfind("parse error", 0) == 0) {
    if (const auto colon = s.find(": "); colon != s.npos) s = s.substr(colon + 2);
  }
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x7f) {
      out += c;
    } else {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += u == 0x7f ? std::string("<U+007F>")
                       : std::string("<0x") + kHex[u >> 4] + kHex[u & 0xf] + ">";
    }
  }
  return out;
}

// A NUL byte reads as the end of the text to nlohmann, so that a file cut short by one, or a binary
// or zero-filled file, would be reported as ending early, or even accepted: refuse it where it is.
constexpr std::string_view kNulByte = "a NUL byte: a binary or zero-filled file, not JSON text";

// Fails with the position of a parse error at byte `at` (0-based) and nlohmann's explanation, or
// with the NUL byte the parser stopped at.
[[noreturn]] void fail_malformed(std::string_view text, std::string_view source, std::size_t at,
                                 const std::string& what) {
  const std::size_t nul = text.find('\0');
  if (nul != std::string_view::npos && at >= nul) {
    fail_input(source,
               "malformed JSON at " + line_column(text, nul) + " (" + std::string(kNulByte) + ")");
  }
  fail_input(source, "malformed JSON at " + line_column(text, at) + " (" +
                         parse_error_explanation(what) + ")");
}

// Parses without building anything, to find where a parse fails and why: nlohmann reports a number
// too large for a double (1e400) as an out_of_range exception, which carries no position.
class ErrorLocator : public nlohmann::json::json_sax_t {
 public:
  std::size_t byte = 0;
  std::string what;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t at, const std::string&,
                   const nlohmann::detail::exception& e) override {
    byte = at;
    what = e.what();
    return false;
  }
};

// Appends `value` as JSON text to `out`, stopping once `out` holds more than `max` bytes: each
// level of nesting writes a byte first, so the recursion is never deeper than `max` levels (dump()
// recurses through the whole value: a value nested 100,000 arrays deep overflowed the stack).
void append_json(const nlohmann::json& value, std::string& out, std::size_t max) {
  const auto scalar = [](const nlohmann::json& v) {
    return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (!value.is_structured()) {
    out += scalar(value);
    return;
  }
  out += value.is_array() ? '[' : '{';
  bool first = true;
  for (auto it = value.begin(); it != value.end() && out.size() <= max; ++it) {
    if (!first) out += ',';
    first = false;
    if (value.is_object()) out += scalar(nlohmann::json(it.key())) + ':';
    append_json(*it, out, max);
  }
  out += value.is_array() ? ']' : '}';
}

}  // namespace

std::string json_excerpt(const nlohmann::json& value) {
  constexpr std::size_t kMax = 60;
  std::string s;
  append_json(value, s, kMax);
  if (s.size() <= kMax + 3) return s;
  // Cut before a whole character: back over UTF-8 continuation bytes.
  std::size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

std::string json_type_name(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "an integer";
    case nlohmann::json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

namespace {

// Refuses an object that names a key twice (nlohmann keeps the last one silently), naming the
// key's JSON path.
class DuplicateKeys {
 public:
  explicit DuplicateKeys(std::string_view source) : source_(source) {}

  bool operator()(int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start || event == Event::array_start) {
      open_.push_back({event == Event::object_start, {}, {}});
    } else if (event == Event::object_end || event == Event::array_end) {
      open_.pop_back();
    } else if (event == Event::key && !open_.empty()) {
      std::string key = parsed.get<std::string>();
      if (!open_.back().keys.insert(key).second) {
        fail_input(std::string(source_) + ": " + path() + "." + key,
                   "duplicate key (a JSON object names each key once; the last would silently "
                   "win)");
      }
      open_.back().current = std::move(key);
    }
    return true;
  }

 private:
  struct Container {
    bool object;
    std::set<std::string> keys;
    std::string current;  // the key whose value is being read
  };
  std::string path() const {
    std::string p = "$";
    for (std::size_t i = 0; i + 1 < open_.size(); ++i) {
      p += open_[i].object ? "." + open_[i].current : "[]";
    }
    return p;
  }

  std::string_view source_;
  std::vector<Container> open_;
};

}  // namespace

nlohmann::json parse_json_text(std::string_view text, std::string_view source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end(), DuplicateKeys(source));
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's message says what was unexpected; add a line:column position.
    ErrorLocator locator;
    if (!nlohmann::json::sax_parse(text.begin(), text.end(), &locator)) {
      fail_malformed(text, source, locator.byte > 0 ? locator.byte - 1 : 0, locator.what);
    }
    fail_malformed(text, source, 0, e.what());
  }
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    fail_malformed(text, source, nul, "");
  }
  return j;
}

namespace {

std::string read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail_input(path.string(), "no such file");
  if (std::filesystem::is_directory(path, ec))
    fail_input(path.string(), "is a directory, not a JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(path.string(), "cannot open for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return std::move(buffer).str();
}

// Builds the document from parser events, except the elements of the top-level array `key`,
// each handed over when complete and then dropped.
class StreamingDom : public nlohmann::json::json_sax_t {
 public:
  StreamingDom(std::string_view key,
               const std::function<void(const nlohmann::json&, std::size_t)>& element)
      : key_name_(key), element_(element) {}

  nlohmann::json root;
  std::size_t error_byte = 0;
  std::string error;

  bool null() override { return value(nullptr); }
  bool boolean(bool b) override { return value(b); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override { return value(v); }
  bool number_float(number_float_t v, const string_t&) override { return value(v); }
  bool string(string_t& s) override { return value(std::move(s)); }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override { return open(nlohmann::json::object()); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    const bool streamed = stack_.size() == 1 && key_ == key_name_;
    open(nlohmann::json::array());
    if (streamed) streamed_ = stack_.back();
    return true;
  }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t byte, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error_byte = byte;
    error = e.what();
    return false;
  }

 private:
  nlohmann::json* place(nlohmann::json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    nlohmann::json& top = *stack_.back();
    if (top.is_object()) return &(top[key_] = std::move(v));
    top.push_back(std::move(v));
    return &top.back();
  }
  bool value(nlohmann::json v) {
    handed(place(std::move(v)));
    return true;
  }
  bool open(nlohmann::json v) {
    stack_.push_back(place(std::move(v)));
    return true;
  }
  bool close() {
    nlohmann::json* done = stack_.back();
    stack_.pop_back();
    handed(done);
    return true;
  }
  // An element of the streamed array, complete: hand it over and drop it.
  void handed(nlohmann::json* v) {
    if (streamed_ == nullptr || stack_.empty() || stack_.back() != streamed_) return;
    element_(*v, index_++);
    streamed_->get_ref<nlohmann::json::array_t&>().pop_back();
  }

  std::string key_name_;
  const std::function<void(const nlohmann::json&, std::size_t)>& element_;
  std::vector<nlohmann::json*> stack_;
  std::string key_;
  nlohmann::json* streamed_ = nullptr;
  std::size_t index_ = 0;
};

}  // namespace

nlohmann::json load_json_file(const std::filesystem::path& path) {
  return parse_json_text(read_json_file(path), path.string());
}

nlohmann::json load_json_file_streaming(
    const std::filesystem::path& path, std::string_view key,
    const std::function<void(const nlohmann::json&, std::size_t)>& element) {
  const std::string text = read_json_file(path);
  StreamingDom dom(key, element);
  if (!nlohmann::json::sax_parse(text, &dom)) {
    fail_malformed(text, path.string(), dom.error_byte > 0 ? dom.error_byte - 1 : 0, dom.error);
  }
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    fail_malformed(text, path.string(), nul, "");
  }
  return std::move(dom.root);
}

}  // namespace trainsim
