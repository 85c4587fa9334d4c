#include "sim/plan/megatron_args.hpp"

#include <algorithm>
#include <optional>

#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"
#include "sim/plan/megatron_arg_table.hpp"

namespace trainsim {

std::vector<std::string> launch_words(std::string_view text, const std::string& where) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      while (i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) ++i;
    } else if (c == '#' && !in_word) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '\'' || c == '"') {
      const auto close = text.find(c, i + 1);
      if (close == std::string_view::npos) fail_input(where, std::string("unclosed ") + c);
      word += text.substr(i + 1, close - i - 1);
      in_word = true;
      i = close;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  for (const auto& w : words) {
    if (w.find('$') != std::string::npos) {
      fail_input(where,
                 "'" + w + "' holds a shell variable: give its value (trainsim runs no shell)");
    }
  }
  const auto script = std::find_if(words.rbegin(), words.rend(),
                                   [](const std::string& w) { return w.ends_with(".py"); });
  if (script != words.rend()) words.erase(words.begin(), script.base());
  return words;
}

namespace {

// The arguments as argparse would hold them: each name's values (the last occurrence wins).
using Given = std::map<std::string, std::vector<std::string>>;

// An argument trainsim does not read: set aside where it is a near miss of one it does.
void unread(const std::string& name, const std::string& where, MegatronPlan& out) {
  if (const auto near = nearest_name(name, megatron_arg_names()); near && *near != name) {
    fail_input(where + " " + name, "not an argument trainsim reads; did you mean " + *near + "?");
  }
  out.unread.push_back(name);
}

Given read_words(const std::vector<std::string>& words, const std::string& where,
                 MegatronPlan& out) {
  Given given;
  for (std::size_t i = 0; i < words.size();) {
    std::string name = words[i++];
    if (!name.starts_with("--")) {
      fail_input(where, "expected an argument (--name), got '" + name + "'");
    }
    std::vector<std::string> values;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      values.push_back(name.substr(eq + 1));
      name.resize(eq);
    }
    while (i < words.size() && !words[i].starts_with("--")) values.push_back(words[i++]);
    const std::optional<Arity> arity = megatron_arity(name);
    if (!arity) {
      unread(name, where, out);
      continue;
    }
    const std::string at = where + " " + name;
    if (*arity == Arity::kSwitch && !values.empty()) fail_input(at, "takes no value");
    if (*arity == Arity::kOne && values.size() != 1) fail_input(at, "takes one value");
    if (*arity == Arity::kList && values.empty()) fail_input(at, "takes one value or more");
    given[name] = values;
  }
  return given;
}

}  // namespace

MegatronPlan plan_from_megatron_args(const std::vector<std::string>& words, const Model& model,
                                     const std::string& where) {
  MegatronPlan out;
  const Given given = read_words(words, where, out);
  MegatronReader r{given, model, where, out};
  r.check_shapes();
  r.direct_fields();
  r.pipeline();
  r.precision();
  r.recompute();
  r.optimizer();
  r.attention_and_context();
  r.experts();
  r.defaults();
  return out;
}

}  // namespace trainsim
