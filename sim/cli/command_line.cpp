#include "sim/cli/command_line.hpp"

#include <charconv>

#include <algorithm>

#include <boost/program_options.hpp>
#include <cctype>

#include "sim/core/error.hpp"
#include "sim/core/suggest.hpp"

namespace po = boost::program_options;

namespace trainsim {

namespace {

// Whether `arg` holds a %word% (Boost's message placeholders are such words).
bool holds_placeholder(const std::string& arg) {
  for (auto open = arg.find('%'); open != std::string::npos; open = arg.find('%', open + 1)) {
    std::size_t end = open + 1;
    while (end < arg.size() &&
           (std::isalpha(static_cast<unsigned char>(arg[end])) != 0 || arg[end] == '_')) {
      ++end;
    }
    if (end > open + 1 && end < arg.size() && arg[end] == '%') return true;
  }
  return false;
}

}  // namespace

po::variables_map parse_command_line(const std::string& command,
                                     const std::vector<std::string>& args,
                                     const po::options_description& options,
                                     const char* positional) {
  // Refused before Boost sees them: a flag holding a %word% (Boost formats its errors by
  // replacing %canonical_option% and the like with the flag as typed, again until none is left,
  // so such a flag never returns), and the option that collects the positional arguments, which
  // is how Boost gathers them, not a flag to give.
  const std::string hidden = std::string("--") + positional;
  for (const std::string& a : args) {
    if (a.starts_with("-") &&
        (holds_placeholder(a) || a == hidden || a.starts_with(hidden + "="))) {
      fail_input("trainsim " + command,
                 "unrecognised option '" + a + "' (see trainsim " + command + " --help)");
    }
  }
  po::options_description all;
  all.add(options).add_options()(positional, po::value<std::vector<std::string>>(), "");
  po::positional_options_description free;
  free.add(positional, -1);
  po::variables_map vm;
  try {
    po::store(
        po::command_line_parser(args)
            .options(all)
            .positional(free)
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run(),
        vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    std::vector<std::string> known;
    for (const auto& o : options.options()) known.push_back("--" + o->long_name());
    fail_input("trainsim " + command, std::string(e.what()) +
                                          did_you_mean(e.get_option_name(), known) +
                                          " (see trainsim " + command + " --help)");
  } catch (const po::error& e) {
    fail_input("trainsim " + command,
               std::string(e.what()) + " (see trainsim " + command + " --help)");
  }
  // "--tp --out X", "--out --svg": every flag that takes a value took the next flag instead.
  // --megatron-args takes another tool's arguments, which begin with "--" too: refused only where
  // its value is one of this command's flags.
  const auto own_flag = [&options](const std::string& text) {
    const auto& list = options.options();
    return std::any_of(list.begin(), list.end(),
                       [&](const auto& o) { return text == "--" + o->long_name(); });
  };
  for (const auto& [name, value] : vm) {
    const auto* text = boost::any_cast<std::string>(&value.value());
    if (text && text->starts_with("--") && (name != "megatron-args" || own_flag(*text))) {
      fail_input("--" + name, "needs a value, got the flag " + *text);
    }
    const auto* texts = boost::any_cast<std::vector<std::string>>(&value.value());
    if (texts && name != positional) {
      for (const auto& t : *texts) {
        if (t.starts_with("--")) fail_input("--" + name, "needs a value, got the flag " + t);
      }
    }
  }
  return vm;
}

std::optional<std::string> string_of(const po::variables_map& vm, const std::string& flag) {
  if (!vm.count(flag)) return std::nullopt;
  return vm[flag].as<std::string>();
}

std::string format_of(const po::variables_map& vm, const std::string& fallback) {
  if (!vm.count("format")) return fallback;
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "json") {
    fail_input("--format", "must be text or json, got '" + format + "'");
  }
  return format;
}

std::optional<std::string> path_of(const po::variables_map& vm, const std::string& flag) {
  if (!vm.count(flag)) return std::nullopt;
  std::string path = vm[flag].as<std::string>();
  if (path.empty()) fail_input("--" + flag, "must not be empty");
  return path;
}

std::vector<std::string> strings_of(const po::variables_map& vm, const std::string& option) {
  if (!vm.count(option)) return {};
  return vm[option].as<std::vector<std::string>>();
}

std::int64_t positive_value(const std::string& flag, const std::string& text) {
  std::int64_t n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size() || n < 1) {
    fail_input(flag, "must be a positive integer, got '" + text + "'");
  }
  return n;
}

std::optional<std::int64_t> positive_of(const boost::program_options::variables_map& vm,
                                        const std::string& flag) {
  const auto text = string_of(vm, flag);
  if (!text) return std::nullopt;
  return positive_value("--" + flag, *text);
}

}  // namespace trainsim
