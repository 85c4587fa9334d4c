#pragma once
// `trainsim reshard` as one call: a model, a platform and two layouts (and optionally a
// checkpoint on disk) in; every tensor's shards under both layouts, the diagnostics and the
// conversion plan out, as text or JSON.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sim/check/diagnostic.hpp"
#include "sim/model/model.hpp"
#include "sim/platform/platform.hpp"
#include "sim/reshard/checkpoint.hpp"
#include "sim/reshard/conversion.hpp"
#include "sim/reshard/shards.hpp"

namespace trainsim {

struct ReshardResult {
  std::string model_name;
  std::string platform_name;
  LayoutShards from;
  LayoutShards to;
  std::optional<CheckpointListing> checkpoint;
  ConversionPlan plan;
  double same_layout_load_s = 0;  // resuming the old checkpoint at the old layout
  std::vector<Diagnostic> diagnostics;
  bool has_errors() const;
};

/// Both layouts must have passed validate_layout. InputError for a bad checkpoint.
ReshardResult reshard(const Model& model, const Platform& platform, const Plan& from,
                      const Plan& to, const std::optional<std::filesystem::path>& checkpoint);

std::string reshard_text(const ReshardResult& result);
std::string reshard_json(const ReshardResult& result);

}  // namespace trainsim
