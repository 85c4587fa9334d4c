// nanotron's pipeline partition (src/nanotron/models/base.py, build_model, and
// LlamaModel.get_block_compute_costs), reproduced with its arithmetic.
#include "sim/plan/partition.hpp"

namespace trainsim {

std::vector<std::int64_t> nanotron_block_costs(const Model& model, const std::vector<Block>& blocks,
                                               std::int64_t padded_vocab) {
  const std::int64_t h = model.hidden_size;
  const std::int64_t d_qkv = h / model.num_attention_heads;  // integer division, as nanotron
  const std::int64_t decoder =
      4 * model.num_attention_heads * d_qkv * h + 3 * model.ffn_hidden_size * h;
  std::vector<std::int64_t> costs;
  for (const auto& b : blocks) {
    if (b.kind == BlockKind::kDecoder) {
      costs.push_back(decoder);
    } else if (b.kind == BlockKind::kLmHead) {
      costs.push_back(padded_vocab * h);
    } else {
      costs.push_back(0);
    }
  }
  return costs;
}

Partition nanotron_partition(const Model& model, std::int64_t pp, std::int64_t padded_vocab) {
  std::vector<Block> blocks = model_blocks(model, /*with_cast=*/true);
  const auto costs = nanotron_block_costs(model, blocks, padded_vocab);
  std::vector<std::int64_t> cumulative;
  std::int64_t sum = 0;
  for (auto c : costs) cumulative.push_back(sum += c);
  const double total = static_cast<double>(cumulative.back());
  std::vector<double> thresholds;
  for (std::int64_t rank = 0; rank < pp; ++rank) {
    thresholds.push_back(total * (static_cast<double>(rank + 1) / static_cast<double>(pp)));
  }
  std::vector<std::int64_t> rank_of;
  std::size_t rank = 0;
  for (auto c : cumulative) {
    rank_of.push_back(static_cast<std::int64_t>(rank));
    if (static_cast<double>(c) > thresholds[rank]) ++rank;
  }
  // Stage boundaries from the (non-decreasing) rank of every block.
  std::vector<std::int64_t> bounds(static_cast<std::size_t>(pp) + 1, 0);
  std::size_t i = 0;
  for (std::int64_t s = 0; s < pp; ++s) {
    bounds[static_cast<std::size_t>(s)] = static_cast<std::int64_t>(i);
    while (i < rank_of.size() && rank_of[i] == s) ++i;
  }
  bounds[static_cast<std::size_t>(pp)] = static_cast<std::int64_t>(blocks.size());
  return partition_from_bounds("nanotron", std::move(blocks), bounds);
}

}  // namespace trainsim
