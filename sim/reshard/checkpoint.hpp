#pragma once
// A checkpoint on disk, read as far as its format allows without a deep-learning runtime and
// without executing or unpickling anything: safetensors headers (Hugging Face saves with their
// model.safetensors.index.json, nanotron's one file per tensor shard), the plain-JSON metadata
// of Megatron-LM's distributed checkpoints. Pickled files (.pt, .bin, torch_dist's .metadata) are
// listed, never opened.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/check/diagnostic.hpp"
#include "sim/model/model.hpp"
#include "sim/reshard/safetensors.hpp"
#include "sim/reshard/shards.hpp"

namespace trainsim {

struct CheckpointListing {
  std::string directory;
  std::string
      format;  // "safetensors (Hugging Face index)", "safetensors", "megatron torch_dist", ...
  std::vector<SavedTensor> tensors;
  std::int64_t files = 0;
  std::int64_t bytes = 0;          // of every file read or listed
  std::int64_t pickled_files = 0;  // .pt/.bin/.pkl/.metadata: listed, not opened
};

/// Reads `dir`. InputError naming the file for a hostile or corrupt safetensors file or index.
CheckpointListing read_checkpoint(const std::filesystem::path& dir);

/// The saved shapes against what the layout `from` predicts for `model`: a tensor saved as one
/// TP shard instead of the whole (ColossalAI #6108), with its padding, of another shape; tensors
/// the model has and the checkpoint lacks; shards of uneven size.
std::vector<Diagnostic> compare_checkpoint(const CheckpointListing& checkpoint,
                                           const LayoutShards& from);

}  // namespace trainsim
