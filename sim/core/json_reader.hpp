#pragma once
// Strict reading of JSON inputs: every key must be known, every number in range, and every
// error names the file and the JSON path ("models/x.json: $.hidden_size: must be ...").
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/json_text.hpp"

namespace trainsim {

struct IntRange {
  std::int64_t min = 1;
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
};

struct RealRange {
  double min = 0.0;
  bool min_inclusive = false;
  double max = std::numeric_limits<double>::infinity();
  bool max_inclusive = true;
  /// Whether x is finite and within the range.
  bool holds(double x) const;
  /// "a number >= 0 and < 1": what an error message says a value must be.
  std::string describe() const;
};

/// A JSON object read strictly. Call finish() after reading to reject unknown keys.
class JsonObject {
 public:
  JsonObject(const nlohmann::json& value, std::string file, std::string path = "$");

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  std::string where(std::string_view key) const;
  bool has(std::string_view key) const;

  std::int64_t integer(std::string_view key, IntRange range = {});
  std::optional<std::int64_t> optional_integer(std::string_view key, IntRange range = {});
  double number(std::string_view key, RealRange range = {});
  std::optional<double> optional_number(std::string_view key, RealRange range = {});
  std::string string(std::string_view key);
  std::optional<std::string> optional_string(std::string_view key);
  /// A string that must be one of `choices`.
  std::string choice(std::string_view key, const std::vector<std::string_view>& choices);
  std::optional<std::string> optional_choice(std::string_view key,
                                             const std::vector<std::string_view>& choices);
  bool boolean(std::string_view key);
  std::optional<bool> optional_boolean(std::string_view key);
  JsonObject object(std::string_view key);
  std::optional<JsonObject> optional_object(std::string_view key);
  /// The raw value (any type); marks the key as known.
  const nlohmann::json& raw(std::string_view key);
  /// Marks keys as known without reading them (documentation fields and the like).
  void allow(std::initializer_list<std::string_view> keys);

  /// Rejects any key that was not read or allowed.
  void finish() const;

  [[noreturn]] void fail(std::string_view key, std::string_view message) const;

 private:
  const nlohmann::json& get(std::string_view key);
  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
  std::set<std::string, std::less<>> used_;
};

}  // namespace trainsim
