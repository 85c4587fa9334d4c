#include "sim/reshard/shards.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>

#include "sim/cost/rank_params.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/plan/vocab.hpp"

namespace trainsim {

Interval Interval::intersect(const Interval& o) const {
  return {std::max(begin, o.begin), std::min(end, o.end)};
}

std::int64_t PlacedParam::shard_numel() const {
  std::int64_t n = 1;
  for (auto d : shards.front().shape) n *= d;
  return n;
}

bool PlacedParam::held_by(std::int64_t stage) const {
  return std::find(stages.begin(), stages.end(), stage) != stages.end();
}

bool PlacedParam::held_by(std::int64_t stage, std::int64_t ep) const {
  return (ep_rank < 0 || ep_rank == ep) && held_by(stage);
}

Interval FlatBuffer::owned(std::int64_t share, std::int64_t shares) const {
  const std::int64_t n = size / shares;
  return {share * n, (share + 1) * n};
}

Interval FlatBuffer::of(std::size_t i) const {
  const auto it = params.find(i);
  return it == params.end() ? Interval{} : it->second;
}

std::int64_t LayoutShards::tp_of(std::size_t i) const {
  return params[i].is_expert() ? plan.expert_tp() : plan.tp;
}

std::int64_t LayoutShards::data_shards_of(std::size_t i) const {
  return apart(i) ? plan.expert_data_shards() : plan.data_shards();
}

const FlatBuffer& LayoutShards::expert_buffer(std::int64_t stage, std::int64_t ep) const {
  return expert_buffers[static_cast<std::size_t>(stage * plan.ep + ep)];
}

const FlatBuffer& LayoutShards::buffer_of(std::size_t i, std::int64_t stage) const {
  if (apart(i)) return expert_buffer(stage, placed[i].ep_rank);
  return buffers[static_cast<std::size_t>(stage)];
}

LayoutShards::Numel LayoutShards::stage_shard_numel(std::int64_t stage, std::int64_t ep) const {
  Numel n;
  for (std::size_t i = 0; i < placed.size(); ++i) {
    if (!placed[i].held_by(stage, ep)) continue;
    (params[i].is_expert() ? n.experts : n.shared) += placed[i].shard_numel();
  }
  return n;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

// Physical stage of each block of the partition (a block index -> stage).
std::int64_t stage_of(const Partition& partition, BlockKind kind, std::int64_t layer) {
  for (std::int64_t v = 0; v < partition.num_stages(); ++v) {
    const auto& r = partition.stages[static_cast<std::size_t>(v)];
    for (auto i = r.begin; i < r.end; ++i) {
      const Block& b = partition.blocks[static_cast<std::size_t>(i)];
      if (b.kind == kind && b.layer == layer) return v % partition.physical_stages();
    }
  }
  return -1;  // a layer the rule does not build
}

std::vector<std::int64_t> holders(const Partition& partition, const ParamSpec& spec,
                                  const Model& model) {
  std::vector<std::int64_t> out;
  const std::int64_t s = stage_of(partition, spec.block, spec.layer);
  if (s >= 0) out.push_back(s);
  // The stages holding a copy of the word embedding (a tied LM head, a multi-token-prediction
  // module) keep their own.
  if (spec.block == BlockKind::kEmbedding && spec.vocabulary) {
    for (std::int64_t v = 0; v < partition.num_stages(); ++v) {
      const std::int64_t at = v % partition.physical_stages();
      if (holds_embedding_copy(model, partition, v) &&
          std::find(out.begin(), out.end(), at) == out.end()) {
        out.push_back(at);
      }
    }
  }
  return out;
}

PlacedParam place(const ParamSpec& spec, std::int64_t tp, std::int64_t padded_vocab) {
  PlacedParam p;
  p.padded_shape = spec.shape;
  if (spec.vocabulary) p.padded_shape[0] = padded_vocab;
  const std::size_t dim = spec.split == TpSplit::kColumns ? 1 : 0;
  const std::int64_t extent = p.padded_shape[dim];
  for (std::int64_t t = 0; t < tp; ++t) {
    TpShard shard;
    shard.shape = p.padded_shape;
    if (spec.split == TpSplit::kReplicated) {
      shard.split = {0, extent};
    } else {
      assert(extent % tp == 0 && "the plan's validation guarantees even TP splits");
      shard.shape[dim] = extent / tp;
      shard.split = {t * extent / tp, (t + 1) * extent / tp};
    }
    const std::int64_t model_extent = spec.shape[dim];
    shard.real = shard.split.intersect({0, model_extent}).size();
    p.shards.push_back(std::move(shard));
  }
  return p;
}

std::int64_t round_up(std::int64_t n, std::int64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

// The flat buffer of `stage`'s parameters that `in_buffer` selects, sharded over `shards` ranks.
template <class InBuffer>
FlatBuffer flat_buffer(const LayoutShards& l, std::int64_t stage, std::int64_t shards,
                       InBuffer&& in_buffer) {
  FlatBuffer b;
  const bool megatron = l.plan.effective_framework() == Framework::kMegatron;
  std::vector<std::size_t> order(l.placed.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (megatron) std::reverse(order.begin(), order.end());
  std::int64_t offset = 0;
  for (std::size_t i : order) {
    if (!l.placed[i].held_by(stage) || !in_buffer(i)) continue;
    if (megatron) offset = round_up(offset, 64);
    const Interval at{offset, offset + l.placed[i].shard_numel()};
    b.params.emplace(i, at);
    offset = at.end;
  }
  b.size = round_up(offset, megatron ? std::lcm(shards, std::int64_t{128}) : shards);
  return b;
}

void build_buffers(LayoutShards& l) {
  const bool apart = l.experts_apart();
  for (std::int64_t s = 0; s < l.plan.pp; ++s) {
    l.buffers.push_back(
        flat_buffer(l, s, l.plan.data_shards(), [&](std::size_t i) { return !l.apart(i); }));
    if (!apart) continue;
    for (std::int64_t e = 0; e < l.plan.ep; ++e) {
      l.expert_buffers.push_back(flat_buffer(l, s, l.plan.expert_data_shards(), [&](std::size_t i) {
        return l.placed[i].ep_rank == e;
      }));
    }
  }
}

}  // namespace

LayoutShards shard_layout(const Model& model, const Platform& platform, const Plan& plan,
                          const PlanOrigin& origin) {
  LayoutShards l;
  l.plan = plan;
  l.partition = build_partition(model, platform, plan, origin);
  l.vocab_multiple = plan.vocab_multiple();
  l.padded_vocab = padded_vocab(model.vocab_size, l.vocab_multiple, plan.tp);
  l.params = model_parameters(model);
  const std::int64_t experts_per_rank = model.moe.is_moe() ? model.moe.num_experts / plan.ep : 1;
  for (const auto& spec : l.params) {
    PlacedParam p = place(spec, spec.is_expert() ? plan.expert_tp() : plan.tp, l.padded_vocab);
    p.stages = holders(l.partition, spec, model);
    if (spec.is_expert()) p.ep_rank = spec.expert / experts_per_rank;
    l.placed.push_back(std::move(p));
  }
  if (plan.distributed_optimizer()) build_buffers(l);
  return l;
}

}  // namespace trainsim
