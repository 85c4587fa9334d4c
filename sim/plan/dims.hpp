#pragma once
// The parallel dimensions a rank layout is made of, and the order in which ranks enumerate
// them (Megatron-LM's `order`, innermost first).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainsim {

/// Tensor, context, expert, data and pipeline parallelism; expert data parallelism: the ranks
/// holding the same experts, over which their gradients are reduced (Megatron-Core's
/// expert-data-parallel group); expert tensor parallelism: the ranks splitting the same experts'
/// matrices, over which the dispatcher gathers their tokens (Megatron-Core's expert
/// tensor-parallel group); and a pipeline stage's every rank (tp x cp x dp: Megatron-Core's
/// tensor-and-data-parallel group with context parallelism, over which Transformer Engine reduces
/// FP8 amaxes). With several distributed-optimizer instances (Megatron-LM's
/// --num-distributed-optimizer-instances N), the data-parallel ranks split into N instances of
/// consecutive ranks: the intra-instance groups (an instance's dp x cp / N ranks; for experts its
/// expert-data-parallel / N) reduce-scatter gradients and all-gather parameters, the
/// inter-instance groups (one rank of each instance) all-reduce the reduced shards. The
/// embedding group: the ranks of a pipeline that hold the word embedding or a copy of it (the
/// first stage's and, for a tied LM head or a multi-token-prediction module, the stage holding
/// that), over which their gradients are all-reduced (Megatron-Core's embedding group).
/// Hierarchical context parallelism (a2a+p2p) splits each CP group in two levels: its a2a
/// groups of consecutive CP ranks (the low digits of the CP coordinate) and its p2p rings of the
/// ranks one a2a group apart (the high digits; Megatron-Core's hierarchical CP groups). The
/// first five enumerate ranks; the others are derived from them.
enum class Dim : std::uint8_t {
  kTP,
  kCP,
  kEP,
  kDP,
  kPP,
  kEDP,
  kETP,
  kStage,
  kIntraDP,
  kInterDP,
  kIntraEDP,
  kInterEDP,
  kEmbedding,
  kCPA2A,
  kCPP2P
};
inline constexpr std::size_t kNumDims = 15;
/// The dimensions a rank order lists.
inline constexpr std::size_t kNumOrderDims = 5;

inline constexpr std::size_t index_of(Dim d) {
  return static_cast<std::size_t>(d);
}
/// What a dimension is called and whose traffic it carries: one row per dimension, the only
/// place that lists them.
struct DimInfo {
  const char* name;   // "cp-a2a": rank orders, task-graph files
  const char* prose;  // "context (a2a level)": messages ("its context-parallel groups")
  Dim traffic;        // the rank-order dimension its collectives count as (TP, CP, EP, DP, PP)
};
const DimInfo& info(Dim d);
const char* to_string(Dim d);
/// Every dimension, in enum order.
inline constexpr std::array<Dim, kNumDims> all_dims() {
  std::array<Dim, kNumDims> out{};
  for (std::size_t i = 0; i < kNumDims; ++i) out[i] = static_cast<Dim>(i);
  return out;
}
/// Context parallelism's group or one of its hierarchical levels.
inline bool is_context_dim(Dim d) {
  return info(d).traffic == Dim::kCP;
}

/// Innermost first: the first dimension varies fastest with the rank.
using RankOrder = std::array<Dim, kNumOrderDims>;
/// Megatron-LM's default, "tp-cp-ep-dp-pp": a TP group on consecutive GPUs (one node), then
/// CP, EP and DP, pipeline stages outermost.
inline constexpr RankOrder kMegatronOrder = {Dim::kTP, Dim::kCP, Dim::kEP, Dim::kDP, Dim::kPP};

/// "tp-cp-ep-dp-pp".
std::string to_string(const RankOrder& order);
/// Parses "tp-cp-ep-dp-pp" (every dimension once, in any order); nullopt if malformed.
std::optional<RankOrder> parse_rank_order(std::string_view text);

}  // namespace trainsim
