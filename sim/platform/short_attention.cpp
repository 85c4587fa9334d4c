#include "sim/platform/short_attention.hpp"

#include <iterator>
#include <map>

#include "sim/platform/kernel_db.hpp"

namespace trainsim {

std::int64_t attention_query_tiles(std::int64_t seq) {
  return seq <= 0 ? 1 : (seq + kAttentionTile - 1) / kAttentionTile;
}

std::int64_t attention_tile_pairs(std::int64_t seq, bool causal) {
  const std::int64_t t = attention_query_tiles(seq);
  return causal ? t * (t + 1) / 2 : t * t;
}

double attention_tile_work(const AttentionTileCosts& costs, std::int64_t seq, bool causal) {
  return costs.per_query_tile * static_cast<double>(attention_query_tiles(seq)) +
         costs.per_tile_pair * static_cast<double>(attention_tile_pairs(seq, causal));
}

std::optional<AttentionTileCosts> fit_attention_tile_costs(std::int64_t short_seq,
                                                           double short_seconds,
                                                           std::int64_t long_seq,
                                                           double long_seconds, bool causal) {
  const auto t0 = static_cast<double>(attention_query_tiles(short_seq));
  const auto t1 = static_cast<double>(attention_query_tiles(long_seq));
  const auto p0 = static_cast<double>(attention_tile_pairs(short_seq, causal));
  const auto p1 = static_cast<double>(attention_tile_pairs(long_seq, causal));
  // a t + b p = seconds at both lengths; p grows faster than t, so the system is regular when
  // the long sequence has more tiles.
  const double det = t0 * p1 - t1 * p0;
  if (!(det > 0)) return std::nullopt;
  AttentionTileCosts c{(short_seconds * p1 - long_seconds * p0) / det,
                       (t0 * long_seconds - t1 * short_seconds) / det};
  if (!(c.per_tile_pair > 0)) return std::nullopt;
  if (c.per_query_tile < 0) c = {0, short_seconds / p0};
  return c;
}

namespace {

std::int64_t batch_heads(const KernelDbEntry& e) {
  const auto& a = std::get<AttentionShape>(e.shape);
  return a.batch * a.heads;
}

}  // namespace

std::optional<KernelDbHit> KernelDatabase::shorter_attention(const KernelShape& shape) const {
  const auto* query = std::get_if<AttentionShape>(&shape);
  if (query == nullptr || kind_ != KernelDbKind::kMeasured) return std::nullopt;
  const auto family = family_.find(family_key(shape));
  if (family == family_.end()) return std::nullopt;
  // Each measured sequence's entry with the most batch x heads, shortest sequence first.
  std::map<std::int64_t, const KernelDbEntry*> widest;
  for (std::size_t i : family->second) {
    const KernelDbEntry& e = entries_[i];
    if (e.median_s <= 0) continue;
    const KernelDbEntry*& w = widest[std::get<AttentionShape>(e.shape).seq];
    if (w == nullptr || batch_heads(e) > batch_heads(*w)) w = &e;
  }
  if (widest.size() < 2 || query->seq >= widest.begin()->first) return std::nullopt;
  const auto shortest = widest.begin();
  const auto next = std::next(shortest);
  const auto per_head = [](const KernelDbEntry& e) {
    return e.median_s / static_cast<double>(batch_heads(e));
  };
  const auto costs = fit_attention_tile_costs(shortest->first, per_head(*shortest->second),
                                              next->first, per_head(*next->second), query->causal);
  if (!costs) return std::nullopt;
  // The query's batch x heads at the shortest measured sequence (below the measured batch x
  // heads there: nothing, as for any kernel below the range).
  AttentionShape at = *query;
  at.seq = shortest->first;
  auto anchor = exact(at);
  if (!anchor) anchor = interpolate(at);
  if (!anchor) return std::nullopt;
  const double scale = attention_tile_work(*costs, query->seq, query->causal) /
                       attention_tile_work(*costs, at.seq, query->causal);
  return KernelDbHit{anchor->seconds * scale, KernelDbMatch::kNearest, anchor->spread};
}

}  // namespace trainsim
