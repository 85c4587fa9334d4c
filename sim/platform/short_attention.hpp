#pragma once
// Flash attention shorter than every sequence a measured database holds (packed documents of a
// few hundred tokens): priced from the shortest measured sequence by the tiles the kernel runs.
//
// A flash-attention kernel walks its scores in tiles of kAttentionTile x kAttentionTile (query
// rows by key columns; FlashAttention's Hopper kernels' defaults for head sizes up to 128). Per
// (batch, head) a sequence of L tokens has T = ceil(L / tile) query tiles, each with a fixed cost
// (loading its queries, writing its output and statistics; in the backward, its keys' and
// values' gradients), and P tile pairs of scores (causal: T (T + 1) / 2, the diagonal's tiles
// whole; full: T^2). Its time per (batch, head) is a T + b P. Below the shortest measured
// sequence the FLOPs fall as L^2 but the tiles do not: a 200-token causal document runs 2 query
// tiles and 3 pairs, 2.5 times its FLOPs' worth of 128-token tiles.
//
// The costs a and b come from the two shortest measured sequences of the kernel's family (pass,
// head size, mask), each at its largest batch x heads (the GPU full, time proportional to batch
// x heads); the query's time is the database's time at the shortest sequence and the query's
// batch x heads, scaled by a T + b P of the two lengths. The tile size is the one assumption.
#include <cstdint>
#include <optional>

namespace trainsim {

inline constexpr std::int64_t kAttentionTile = 128;

/// Fixed cost per query tile and cost per tile pair, per (batch, head), in seconds.
struct AttentionTileCosts {
  double per_query_tile = 0;
  double per_tile_pair = 0;
};

/// Query tiles of a sequence of `seq` tokens (at least one).
std::int64_t attention_query_tiles(std::int64_t seq);
/// Tile pairs of scores a sequence computes: causal T (T + 1) / 2, full T^2.
std::int64_t attention_tile_pairs(std::int64_t seq, bool causal);
/// a T + b P of a sequence.
double attention_tile_work(const AttentionTileCosts& costs, std::int64_t seq, bool causal);

/// The costs solved from the time per (batch, head) at two sequence lengths (short < long).
/// Nothing when the tile pairs do not grow between them or the cost per pair is not positive;
/// a negative fixed cost is taken as none (the pairs alone scale the time).
std::optional<AttentionTileCosts> fit_attention_tile_costs(std::int64_t short_seq,
                                                           double short_seconds,
                                                           std::int64_t long_seq,
                                                           double long_seconds, bool causal);

}  // namespace trainsim
