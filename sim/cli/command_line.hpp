#pragma once
// One parser for every command's flags (boost::program_options): a command lists its flags once,
// in an options_description, and that list is what parses them, what an unknown flag's "did you
// mean" suggests from, and what refuses a flag given where a value belongs.
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainsim {

/// The width of every command's --help flag list, and the least its descriptions keep, so that a
/// long flag name quoted in a description (Megatron-LM's) fits on its line instead of being cut
/// in two: options_description(caption, kHelpWidth, kHelpDescriptionWidth).
inline constexpr unsigned kHelpWidth = 92;
inline constexpr unsigned kHelpDescriptionWidth = 56;

/// `args` (after the command word) parsed against `options`, every argument that is no flag's
/// value going to a vector<string> option named `positional`, which this adds (and refuses as a
/// flag: `--positional x`; read it with strings_of()). InputError naming the
/// command on an unknown flag (with the nearest known one), a missing value, or a flag taking a
/// value that the next flag was taken for ("--tp --out X"). Abbreviated flags are refused: they
/// would change meaning as flags are added.
boost::program_options::variables_map parse_command_line(
    const std::string& command, const std::vector<std::string>& args,
    const boost::program_options::options_description& options, const char* positional);

/// A string flag's value, if given.
std::optional<std::string> string_of(const boost::program_options::variables_map& vm,
                                     const std::string& flag);

/// --format: text or json (`fallback` where not given); InputError naming it otherwise.
std::string format_of(const boost::program_options::variables_map& vm, const std::string& fallback);

/// A flag naming a file or directory to write: absent, or a non-empty path.
std::optional<std::string> path_of(const boost::program_options::variables_map& vm,
                                   const std::string& flag);

/// An integer flag's value, if given: a whole number of at least 1 (--jobs); InputError naming
/// the flag otherwise.
std::optional<std::int64_t> positive_of(const boost::program_options::variables_map& vm,
                                        const std::string& flag);
/// `text` as such a number, given for `flag`.
std::int64_t positive_value(const std::string& flag, const std::string& text);

/// A vector<string> option's values, none where not given: the positional arguments, or a flag
/// given more than once (compare's --set).
std::vector<std::string> strings_of(const boost::program_options::variables_map& vm,
                                    const std::string& option);

}  // namespace trainsim
