#include "sim/core/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/suggest.hpp"

namespace trainsim {

namespace {

std::string describe_range(const IntRange& r) {
  if (r.max == std::numeric_limits<std::int64_t>::max()) {
    return "an integer >= " + std::to_string(r.min);
  }
  return "an integer in [" + std::to_string(r.min) + ", " + std::to_string(r.max) + "]";
}

// "a string \"64\"", "an array [1,2]", "null": what a message says it got.
std::string described(const nlohmann::json& value) {
  return value.is_null() ? "null" : json_type_name(value) + " " + json_excerpt(value);
}

}  // namespace

bool RealRange::holds(double x) const {
  return std::isfinite(x) && (min_inclusive ? x >= min : x > min) &&
         (max_inclusive ? x <= max : x < max);
}

std::string RealRange::describe() const {
  std::string s = "a number ";
  s += min_inclusive ? ">= " : "> ";
  s += format_number(min);
  if (std::isfinite(max)) {
    s += max_inclusive ? " and <= " : " and < ";
    s += format_number(max);
  }
  return s;
}

JsonObject::JsonObject(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {
  if (!value.is_object()) {
    fail_input(file_ + ": " + path_, "must be a JSON object, got " + json_type_name(value));
  }
}

std::string JsonObject::where(std::string_view key) const {
  std::string s = file_;
  s += ": ";
  s += path_;
  if (!key.empty()) {
    s += '.';
    s += key;
  }
  return s;
}

bool JsonObject::has(std::string_view key) const {
  return value_->find(std::string(key)) != value_->end();
}

void JsonObject::fail(std::string_view key, std::string_view message) const {
  fail_input(where(key), message);
}

const nlohmann::json& JsonObject::get(std::string_view key) {
  used_.emplace(key);
  auto it = value_->find(std::string(key));
  if (it == value_->end()) {
    // A key of the object one or two edits away is most likely this one misspelt.
    for (const auto& item : value_->items()) {
      if (item.key() != key && edit_distance(item.key(), key) <= 2 && key.size() > 3) {
        fail(key, "required key is missing; the object has '" + item.key() +
                      "': a misspelling of '" + std::string(key) + "'?");
      }
    }
    fail(key, "required key is missing");
  }
  return *it;
}

const nlohmann::json& JsonObject::raw(std::string_view key) {
  return get(key);
}

void JsonObject::allow(std::initializer_list<std::string_view> keys) {
  for (auto k : keys) used_.emplace(k);
}

std::int64_t JsonObject::integer(std::string_view key, IntRange range) {
  const auto& v = get(key);
  std::int64_t out = 0;
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(key, "must be " + describe_range(range) + ", got " + v.dump() + " (more than 2^63 - 1)");
    }
    out = static_cast<std::int64_t>(u);
  } else if (v.is_number_integer()) {
    out = v.get<std::int64_t>();
  } else {
    fail(key, "must be " + describe_range(range) + ", got " + described(v));
  }
  if (out < range.min || out > range.max) {
    fail(key, "must be " + describe_range(range) + ", got " + std::to_string(out));
  }
  return out;
}

std::optional<std::int64_t> JsonObject::optional_integer(std::string_view key, IntRange range) {
  if (!has(key)) {
    used_.emplace(key);
    return std::nullopt;
  }
  return integer(key, range);
}

double JsonObject::number(std::string_view key, RealRange range) {
  const auto& v = get(key);
  if (!v.is_number()) {
    fail(key, "must be " + range.describe() + ", got " + described(v));
  }
  double x = v.get<double>();
  if (!range.holds(x)) fail(key, "must be " + range.describe() + ", got " + v.dump());
  return x;
}

std::optional<double> JsonObject::optional_number(std::string_view key, RealRange range) {
  if (!has(key)) {
    used_.emplace(key);
    return std::nullopt;
  }
  return number(key, range);
}

std::string JsonObject::string(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_string()) fail(key, "must be a string, got " + json_type_name(v));
  auto s = v.get<std::string>();
  if (s.empty()) fail(key, "must not be empty");
  return s;
}

std::optional<std::string> JsonObject::optional_string(std::string_view key) {
  if (!has(key)) {
    used_.emplace(key);
    return std::nullopt;
  }
  return string(key);
}

std::string JsonObject::choice(std::string_view key, const std::vector<std::string_view>& choices) {
  auto s = string(key);
  for (auto c : choices) {
    if (s == c) return s;
  }
  std::string list;
  for (auto c : choices) {
    if (!list.empty()) list += ", ";
    list += c;
  }
  fail(key, "must be one of {" + list + "}, got " + json_excerpt(nlohmann::json(s)) +
                did_you_mean(s, {choices.begin(), choices.end()}));
}

std::optional<std::string> JsonObject::optional_choice(
    std::string_view key, const std::vector<std::string_view>& choices) {
  if (!has(key)) {
    used_.emplace(key);
    return std::nullopt;
  }
  return choice(key, choices);
}

bool JsonObject::boolean(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_boolean()) fail(key, "must be true or false, got " + json_type_name(v));
  return v.get<bool>();
}

std::optional<bool> JsonObject::optional_boolean(std::string_view key) {
  if (!has(key)) {
    used_.emplace(key);
    return std::nullopt;
  }
  return boolean(key);
}

JsonObject JsonObject::object(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_object()) fail(key, "must be a JSON object, got " + json_type_name(v));
  return JsonObject(v, file_, path_ + "." + std::string(key));
}

std::optional<JsonObject> JsonObject::optional_object(std::string_view key) {
  if (!has(key)) {
    used_.emplace(key);
    return std::nullopt;
  }
  return object(key);
}

void JsonObject::finish() const {
  for (const auto& item : value_->items()) {
    if (used_.find(item.key()) != used_.end()) continue;
    const std::vector<std::string> known(used_.begin(), used_.end());
    fail(item.key(), "unknown key" + did_you_mean(item.key(), known) +
                         " (known keys here: " + join(known, ", ") + ")");
  }
}

}  // namespace trainsim
