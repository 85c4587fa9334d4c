#pragma once
// The TOML that training configs are written in (torchtitan's train_configs): [table] and
// [dotted.table] headers, bare, quoted and dotted keys, basic and literal strings, integers
// (with '_' separators), floats, booleans, and arrays of them over one line or several, with
// comments anywhere a line may end. What lies beyond (arrays of tables, inline tables,
// multi-line strings, dates, hexadecimal, octal and binary integers, inf and nan) is an input
// error naming the line, never a silent misreading; so are a key or table given twice.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace trainsim {

/// The document as a JSON object of its tables. InputError naming `file` and the line for what
/// the subset does not hold.
nlohmann::json parse_toml_subset(std::string_view text, const std::string& file);

}  // namespace trainsim
