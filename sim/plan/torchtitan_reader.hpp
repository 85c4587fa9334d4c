#pragma once
// What the torchtitan config's readers share (sim/plan/torchtitan_config.cpp and
// torchtitan_pipeline.cpp): how a plan field is set from a key, torchtitan's defaults, and the
// settings trainsim cannot price.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/json_reader.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/plan_schema.hpp"
#include "sim/plan/torchtitan_config.hpp"

namespace trainsim::torchtitan {

constexpr IntRange kDegree{1, std::int64_t{1} << 16};

// A table of the config, or an empty one at its path where the config has none (torchtitan's
// defaults then apply).
inline JsonObject table(JsonObject& top, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  if (auto t = top.optional_object(key)) return *t;
  return JsonObject(kEmpty, top.file(), top.path() + "." + std::string(key));
}

inline std::int64_t integer_or(JsonObject& o, std::string_view key, std::int64_t fallback,
                               IntRange range = kDegree) {
  return o.optional_integer(key, range).value_or(fallback);
}

class Reader {
 public:
  Reader(TorchtitanPlan& out, const std::map<std::string, std::string>& flags)
      : out_(out), flags_(flags) {}

  // `field` set to `value` by `key` of `o`, or by torchtitan's default where `o` lacks it.
  void set(const JsonObject& o, std::string_view key, const std::string& field,
           const std::string& value) {
    out_.fields[field] = value;
    out_.origin[field] = o.where(key) + (o.has(key) ? "" : " (torchtitan's default)");
    if (!o.has(key)) out_.defaults.push_back(field + " " + value);
  }

  void note(const std::string& text) { out_.notes.push_back(text); }

  bool flagged(const std::string& field) const { return flags_.contains(field); }

  // A setting trainsim cannot price as torchtitan runs it: an input error naming `key`, unless
  // the command line sets `field` itself.
  void unpriced(const JsonObject& o, std::string_view key, const std::string& field,
                const std::string& why) {
    if (!flagged(field)) {
      o.fail(key, why + ": give " + flag_of(field) + " to price the run as one of trainsim's");
    }
    note(o.where(key) + ": " + why + "; " + flag_of(field) + " " + flags_.at(field) + " prices it");
  }

  // An integer plan flag's value, read as the flag reads it (its own error where it is not one
  // of the field's values).
  std::optional<std::int64_t> flag_integer(const std::string& field) const {
    const auto it = flags_.find(field);
    if (it == flags_.end()) return std::nullopt;
    return integer_value(*find_plan_field(field), flag_of(field), it->second);
  }

 private:
  TorchtitanPlan& out_;
  const std::map<std::string, std::string>& flags_;
};

struct Degrees {
  std::int64_t replicate = 1;
  std::int64_t shard = 1;
  std::int64_t tp = 1;
  std::int64_t pp = 1;
  std::int64_t cp = 1;
  std::int64_t dp() const { return replicate * shard; }
};

/// Expert parallelism and expert TP of an MoE model as torchtitan applies them (ep borrowing
/// from shard x cp x tp, etp 1 or tp); on a dense model a note that they do nothing.
void experts(JsonObject& p, const Degrees& d, const Model& model, Reader& r);

/// Where the [model] flavor that named the catalog model differs from it: no MTP module
/// (DeepSeek-V3), FlexAttention's block-causal mask (a note), attention over the whole sequence
/// on every layer (Llama 4 Maverick, refused past the catalog model's chunk).
void flavor_differences(JsonObject& top, const Model& model, std::int64_t seq_len, Reader& r);

/// The pipeline's schedule, virtual stages per rank and torchtitan's split of the layers.
/// Returns the decoder layers of each rank's one model part in stage order ({num_layers}
/// without pipelining), or nothing where a rank holds several (looped schedules) or the command
/// line sets the pipeline.
std::vector<std::int64_t> pipeline(JsonObject& p, const Degrees& d, std::int64_t num_layers,
                                   Reader& r);

}  // namespace trainsim::torchtitan
