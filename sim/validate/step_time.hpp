#pragma once
// What the step-time reference sets share: the fixed split of their rows into the half that fits
// a platform's calibration and the half that checks it, the set's header, and a row's prediction.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "sim/core/hash.hpp"
#include "sim/engine/engine.hpp"
#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

/// "fit" or "check", by the parity of the first byte of the SHA-256 of the row's name, so that no
/// choice of rows can favour a model.
inline std::string split_half(const std::string& row_name) {
  const std::string h = sha256_hex(row_name);
  return std::stoi(h.substr(0, 2), nullptr, 16) % 2 == 0 ? "fit" : "check";
}

/// The shape of a GPT Megatron-LM builds without model options.
struct DefaultGpt {
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t vocab = 0;
  bool tied = true;
  std::int64_t max_positions = 0;
};

/// That GPT: multi-head attention, GeLU MLP of 4h, learned positions, LayerNorm, biases on every
/// linear layer (Megatron-LM's defaults).
Model megatron_default_gpt(const DefaultGpt& g, const std::string& name, const std::string& source);

/// An empty step-time set for `reference` predicted on `platform`, with the platform's band.
ValidationSet step_time_set(const std::filesystem::path& reference, const Platform& platform,
                            std::string metric);

/// Sets row.predicted to the step time of `plan` on the model `model()` builds (the analytic
/// engine unless told otherwise, symmetric replay), or row.skipped to why it is not expressible
/// (an InputError from either).
void predict_step_time(ValidationRow& row, const std::function<Model()>& model, const Plan& plan,
                       const Platform& platform, EngineKind engine = EngineKind::kAnalytic);

}  // namespace trainsim
