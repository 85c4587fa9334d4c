#pragma once
// Reading a Hugging Face config.json: the reader of its keys (bounded integers, defaults for
// absent keys, errors naming the file and key) and the table of architectures it can read.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"
#include "sim/model/model.hpp"

namespace trainsim::hf {

inline constexpr std::int64_t kMaxConfigInteger = (std::int64_t{1} << 31) - 1;

/// "a string \"x\"", "null": the value a message says it got.
inline std::string got(const nlohmann::json& value) {
  return value.is_null() ? "null" : json_type_name(value) + " " + json_excerpt(value);
}

class HfReader {
 public:
  HfReader(const nlohmann::json& j, std::string file, std::string path = "$")
      : j_(j), o_(j, std::move(file), std::move(path)) {}

  bool present(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  // Every size a config holds is far below 2^31; the bound keeps the sums and products the
  // readers form (MLA head sizes, shared experts x width, 4 x n_embd) from overflowing.
  std::int64_t integer(const char* key) { return o_.integer(key, {1, kMaxConfigInteger}); }
  /// A key whose absence means 0 may also say 0 (n_shared_experts, first_k_dense_replace).
  std::int64_t integer_or(const char* key, std::int64_t fallback) {
    return integer_or(key, fallback, {fallback == 0 ? 0 : 1, kMaxConfigInteger});
  }
  std::int64_t integer_or(const char* key, std::int64_t fallback, IntRange range) {
    return present(key) ? o_.integer(key, range) : fallback;
  }
  bool boolean_or(const char* key, bool fallback) {
    return present(key) ? o_.boolean(key) : fallback;
  }
  std::string string_or(const char* key, const char* fallback) {
    return present(key) ? o_.string(key) : fallback;
  }
  [[noreturn]] void fail(const char* key, const std::string& msg) const { o_.fail(key, msg); }
  /// The raw value of a key that must be present (any type).
  const nlohmann::json& raw(const char* key) { return o_.raw(key); }
  /// "FILE: $.key: msg", for a note rather than an error.
  std::string note(const char* key, const std::string& msg) const {
    return o_.where(key) + ": " + msg;
  }
  const nlohmann::json& json() const { return j_; }
  const std::string& file() const { return o_.file(); }

 private:
  const nlohmann::json& j_;
  JsonObject o_;
};

/// Fills a model from a config of one architecture (its first "architectures" entry).
using ArchitectureRead = void (*)(HfReader&, Model&);
/// The reader of an architecture; an input error at `key` of `o` naming the supported ones where
/// it is not supported (a config.json's "architectures", a model file's "architecture").
ArchitectureRead require_architecture(const JsonObject& o, std::string_view key,
                                      const std::string& architecture);

}  // namespace trainsim::hf
