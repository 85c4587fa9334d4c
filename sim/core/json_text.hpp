#pragma once
// JSON text in, with errors that say where: a file or text parsed into a document (line:column of
// a syntax error, duplicate keys and NUL bytes refused with their position), a large table read
// element by element, and values described the way error messages quote them.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace trainsim {

/// Reads and parses a JSON file; InputError on a missing file or malformed JSON (with line:column).
nlohmann::json load_json_file(const std::filesystem::path& path);
/// Parses JSON text; `source` names it in error messages.
nlohmann::json parse_json_text(std::string_view text, std::string_view source);

/// Reads a JSON file as load_json_file() does, but hands each element of the top-level array
/// `key` to `element` (with its index) as soon as it is read and does not keep it: the document
/// returned holds that array empty. A large table then never exists as one whole tree.
nlohmann::json load_json_file_streaming(
    const std::filesystem::path& path, std::string_view key,
    const std::function<void(const nlohmann::json&, std::size_t)>& element);

/// Describes a JSON value's type for error messages ("a string", "an array", ...).
std::string json_type_name(const nlohmann::json& value);
/// A value as an error message quotes it: its JSON text, cut short (with "...") past 60 bytes,
/// however large or deeply nested the value (dump() would recurse through all of it).
std::string json_excerpt(const nlohmann::json& value);

}  // namespace trainsim
