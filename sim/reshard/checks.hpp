#pragma once
// What can go wrong when a checkpoint saved under one layout resumes under another, found before
// the job is launched. Each finding is a diagnostic with `check`'s severities (an error makes
// `trainsim reshard` exit 1) and a fix. Nothing here simulates.
#include <vector>

#include "sim/check/diagnostic.hpp"
#include "sim/model/model.hpp"
#include "sim/platform/platform.hpp"
#include "sim/reshard/shards.hpp"

namespace trainsim {

struct ReshardContext {
  const Model& model;
  const Platform& platform;
  const LayoutShards& from;
  const LayoutShards& to;
};

/// Every detector below, in report order.
std::vector<Diagnostic> check_reshard(const ReshardContext& c);

/// The vocabulary padded to different sizes under the two layouts: whether the framework's loader
/// can merge the old shards (nanotron #106: it cannot), with the padding both layouts can share.
std::vector<Diagnostic> find_padding_change(const ReshardContext& c);
/// Padding rows the new layout adds (initialised, then trained as classes no token targets) or
/// the old one had and the new one drops.
std::vector<Diagnostic> find_padding_rows(const ReshardContext& c);
/// Decoder layers (and the embedding, final norm, LM head) whose pipeline stage changes.
std::vector<Diagnostic> find_stage_moves(const ReshardContext& c);
/// Optimizer-state formats that resume only at the same TP and PP (Megatron-LM's default
/// distributed-optimizer checkpoint), or only through a conversion (DeepSpeed).
std::vector<Diagnostic> find_optimizer_format(const ReshardContext& c);
/// Layers a layout's partition rule does not build: their state is neither saved nor loaded.
std::vector<Diagnostic> find_unbuilt_layers(const ReshardContext& c);
/// A new layout whose model state alone (weights, gradients, optimizer state and the platform's
/// runtime memory, before any activation) exceeds the GPU's memory.
std::vector<Diagnostic> find_new_layout_memory(const ReshardContext& c);

}  // namespace trainsim
