#include "sim/plan/partition.hpp"

#include <cassert>

namespace trainsim {

const char* to_string(BlockKind kind) {
  switch (kind) {
    case BlockKind::kEmbedding:
      return "embedding";
    case BlockKind::kDecoder:
      return "decoder";
    case BlockKind::kFinalNorm:
      return "final_norm";
    case BlockKind::kLmHead:
      return "lm_head";
    case BlockKind::kLoss:
      return "loss";
  }
  return "?";
}

std::int64_t Partition::decoders(std::int64_t stage) const {
  const auto& r = stages[static_cast<std::size_t>(stage)];
  std::int64_t count = 0;
  for (auto i = r.begin; i < r.end; ++i) {
    if (blocks[static_cast<std::size_t>(i)].kind == BlockKind::kDecoder) ++count;
  }
  return count;
}

bool Partition::holds(std::int64_t stage, BlockKind kind) const {
  const auto& r = stages[static_cast<std::size_t>(stage)];
  for (auto i = r.begin; i < r.end; ++i) {
    if (blocks[static_cast<std::size_t>(i)].kind == kind) return true;
  }
  return false;
}

std::vector<std::string> Partition::labels(std::int64_t stage) const {
  const auto& r = stages[static_cast<std::size_t>(stage)];
  std::vector<std::string> out;
  for (auto i = r.begin; i < r.end; ++i) {
    const auto& b = blocks[static_cast<std::size_t>(i)];
    if (b.kind != BlockKind::kDecoder) {
      out.emplace_back(to_string(b.kind));
      continue;
    }
    auto j = i;
    while (j + 1 < r.end && blocks[static_cast<std::size_t>(j + 1)].kind == BlockKind::kDecoder)
      ++j;
    auto first = b.layer;
    auto last = blocks[static_cast<std::size_t>(j)].layer;
    out.push_back(first == last ? "decoder " + std::to_string(first)
                                : "decoder " + std::to_string(first) + "-" + std::to_string(last));
    i = j;
  }
  return out;
}

std::vector<Block> model_blocks(const Model& model) {
  std::vector<Block> blocks;
  blocks.push_back({BlockKind::kEmbedding});
  for (std::int64_t l = 0; l < model.num_layers; ++l) blocks.push_back({BlockKind::kDecoder, l});
  blocks.push_back({BlockKind::kFinalNorm});
  blocks.push_back({BlockKind::kLmHead});
  blocks.push_back({BlockKind::kLoss});
  return blocks;
}

Partition uniform_partition(const Model& model, std::int64_t pp) {
  assert(pp >= 1 && model.num_layers % pp == 0);
  Partition part;
  part.method = "uniform";
  part.blocks = model_blocks(model);
  const std::int64_t per_stage = model.num_layers / pp;
  const auto total = static_cast<std::int64_t>(part.blocks.size());
  for (std::int64_t s = 0; s < pp; ++s) {
    // Block 0 is the embedding, blocks 1..L the decoders; the tail blocks go to the last stage.
    std::int64_t begin = s == 0 ? 0 : 1 + s * per_stage;
    std::int64_t end = s == pp - 1 ? total : 1 + (s + 1) * per_stage;
    part.stages.push_back({begin, end});
  }
  return part;
}

Partition make_partition(const Model& model, const Plan& plan) {
  return uniform_partition(model, plan.pp);
}

}  // namespace trainsim
