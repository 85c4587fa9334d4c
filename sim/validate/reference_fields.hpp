#pragma once
// A row of a reference file read leniently (reference rows carry many fields trainsim does not
// use) but type-checked: a field of the wrong type is an error naming its JSON path.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"

namespace trainsim {

class Fields {
 public:
  Fields(const nlohmann::json& j, std::string file, std::string path)
      : j_(j), file_(std::move(file)), path_(std::move(path)) {}

  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  std::optional<std::int64_t> integer(const char* key) const {
    if (!has(key)) return std::nullopt;
    const auto& v = j_.at(key);
    if (v.is_number_integer()) return v.get<std::int64_t>();
    if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()) {
      return static_cast<std::int64_t>(v.get<double>());
    }
    fail(key, "must be an integer, got " + v.dump());
  }
  /// An integer the row must have, for `what` ("a GPT row"): an error naming it when absent.
  std::int64_t required_integer(const char* key, const std::string& what) const {
    const auto v = integer(key);
    if (!v) fail(key, "is required for " + what + " (an integer)");
    return *v;
  }
  std::optional<double> number(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (!j_.at(key).is_number()) fail(key, "must be a number, got " + j_.at(key).dump());
    return j_.at(key).get<double>();
  }
  bool flag(const char* key) const {
    if (!has(key)) return false;
    if (!j_.at(key).is_boolean()) fail(key, "must be true or false, got " + j_.at(key).dump());
    return j_.at(key).get<bool>();
  }
  std::optional<std::string> string(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (!j_.at(key).is_string()) fail(key, "must be a string, got " + j_.at(key).dump());
    return j_.at(key).get<std::string>();
  }
  /// An array of strings (empty when absent).
  std::vector<std::string> strings(const char* key) const {
    std::vector<std::string> out;
    if (!has(key)) return out;
    const auto& v = j_.at(key);
    if (!v.is_array()) fail(key, "must be an array of strings, got " + v.dump());
    for (const auto& e : v) {
      if (!e.is_string()) fail(key, "must be an array of strings, got " + v.dump());
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    fail_input(file_ + ": " + path_ + "." + key, what);
  }

 private:
  const nlohmann::json& j_;
  std::string file_;
  std::string path_;
};

/// The array `key` ("rows") of a reference file; `not_this` (what the file should be) when it
/// has none.
inline const nlohmann::json& reference_rows(const nlohmann::json& j, const std::string& file,
                                            const std::string& not_this,
                                            const std::string& key = "rows") {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_array()) fail_input(file, not_this);
  return j.at(key);
}

/// Calls visit(row, "$.<key>[i]") for each row of the array `key`, every one of which must be an
/// object.
template <class Visit>
void for_each_row(const nlohmann::json& rows, const std::string& file, Visit&& visit,
                  const std::string& key = "rows") {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string path = "$." + key + "[" + std::to_string(i) + "]";
    if (!rows[i].is_object()) fail_input(file + ": " + path, "must be an object");
    visit(rows[i], path);
  }
}

}  // namespace trainsim
