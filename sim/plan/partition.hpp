#pragma once
// The layer-to-stage partition. A model is a sequence of blocks (embedding, decoder layers,
// final norm, LM head, loss); each pipeline stage holds a contiguous run of them.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/model/model.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

enum class BlockKind { kEmbedding, kDecoder, kFinalNorm, kLmHead, kLoss };
const char* to_string(BlockKind kind);

struct Block {
  BlockKind kind;
  std::int64_t layer = -1;  // decoder index, -1 for other blocks
};

struct StageRange {
  std::int64_t begin = 0;  // [begin, end) into Partition::blocks
  std::int64_t end = 0;
};

struct Partition {
  std::string method;
  std::vector<Block> blocks;
  std::vector<StageRange> stages;

  std::int64_t num_stages() const { return static_cast<std::int64_t>(stages.size()); }
  std::int64_t decoders(std::int64_t stage) const;
  bool holds(std::int64_t stage, BlockKind kind) const;
  /// Block names with decoder runs compressed: {"embedding", "decoder 0-19"}.
  std::vector<std::string> labels(std::int64_t stage) const;
};

/// The model's blocks in execution order.
std::vector<Block> model_blocks(const Model& model);

/// Megatron-LM's default: num_layers / pp decoder layers per stage, the embedding on the first
/// stage, final norm, LM head and loss on the last.
Partition uniform_partition(const Model& model, std::int64_t pp);

/// The partition the plan asks for.
Partition make_partition(const Model& model, const Plan& plan);

}  // namespace trainsim
