#include "sim/reshard/conversion.hpp"

#include <algorithm>

#include "sim/plan/layout.hpp"

namespace trainsim {

namespace {

std::string rank_text(std::int64_t pp, std::int64_t tp, std::int64_t ep) {
  const std::string stage = "pp" + std::to_string(pp);
  if (ep < 0) return stage + " tp" + std::to_string(tp);
  return stage + " ep" + std::to_string(ep) + " etp" + std::to_string(tp);
}

}  // namespace

std::string model_file(std::int64_t pp, std::int64_t tp, std::int64_t ep) {
  return "model " + rank_text(pp, tp, ep);
}

std::string optimizer_file(std::int64_t pp, std::int64_t tp, std::int64_t ep, std::int64_t share) {
  const std::string s = "optim " + rank_text(pp, tp, ep);
  return share < 0 ? s : s + (ep < 0 ? " dp" : " edp") + std::to_string(share);
}

double checkpoint_bytes(const LayoutShards& layout) {
  double numel = 0;
  for (std::size_t i = 0; i < layout.placed.size(); ++i) {
    const PlacedParam& p = layout.placed[i];
    if (p.stages.empty()) continue;
    const bool replicated = layout.params[i].split == TpSplit::kReplicated;
    numel += static_cast<double>(p.shard_numel() * (replicated ? 1 : layout.tp_of(i)));
  }
  return numel * (kCheckpointWeightBytes + kCheckpointOptimizerBytes);
}

namespace {

// A rectangle of a tensor seen as 2-D (a 1-D tensor is one column): rows [r0, r1) x cols [c0, c1).
struct Rect {
  std::int64_t r0, r1, c0, c1;
};

std::int64_t overlap(const Rect& a, const Rect& b) {
  const std::int64_t rows = std::min(a.r1, b.r1) - std::max(a.r0, b.r0);
  const std::int64_t cols = std::min(a.c1, b.c1) - std::max(a.c0, b.c0);
  return rows > 0 && cols > 0 ? rows * cols : 0;
}

// The shard of TP rank t as a rectangle of the global tensor, clipped to the model's rows.
Rect shard_rect(const ParamSpec& spec, const TpShard& shard) {
  const std::int64_t rows = spec.shape[0];
  const std::int64_t cols = spec.shape.size() > 1 ? spec.shape[1] : 1;
  Rect r{0, rows, 0, cols};
  if (spec.split == TpSplit::kRows) r = {shard.split.begin, shard.split.end, 0, cols};
  if (spec.split == TpSplit::kColumns) r = {0, rows, shard.split.begin, shard.split.end};
  r.r1 = std::min(r.r1, rows);  // padding rows hold nothing of the model
  return r;
}

// Elements [a, b) of a shard flattened row-major, as rectangles of the global tensor.
std::vector<Rect> flat_rects(const ParamSpec& spec, const TpShard& shard, Interval flat) {
  const std::int64_t width = shard.shape.size() > 1 ? shard.shape[1] : 1;
  const std::int64_t r0 = spec.split == TpSplit::kRows ? shard.split.begin : 0;
  const std::int64_t c0 = spec.split == TpSplit::kColumns ? shard.split.begin : 0;
  std::vector<Rect> out;
  auto add = [&](std::int64_t ra, std::int64_t rb, std::int64_t ca, std::int64_t cb) {
    if (rb > ra && cb > ca) out.push_back({r0 + ra, r0 + rb, c0 + ca, c0 + cb});
  };
  const std::int64_t ra = flat.begin / width, ca = flat.begin % width;
  const std::int64_t rb = flat.end / width, cb = flat.end % width;
  if (ra == rb) {
    add(ra, ra + 1, ca, cb);
  } else {
    add(ra, ra + 1, ca, width);
    add(ra + 1, rb, 0, width);
    add(rb, rb + 1, 0, cb);
  }
  const Rect model = shard_rect(spec, shard);
  for (auto& r : out) r.r1 = std::min(r.r1, model.r1);
  return out;
}

std::int64_t overlap(const std::vector<Rect>& a, const std::vector<Rect>& b) {
  std::int64_t n = 0;
  for (const auto& x : a) {
    for (const auto& y : b) n += overlap(x, y);
  }
  return n;
}

// Ranks that all hold the same copy of tensor i and share its reading: the data-parallel ranks
// with the context-parallel ones (dp x cp, which hold the same weights; for a routed expert kept
// apart, its expert-data-parallel group), and for a replicated tensor the (expert) TP group too.
double sharers(const LayoutShards& l, std::size_t i) {
  const bool replicated = l.params[i].split == TpSplit::kReplicated;
  return static_cast<double>(l.data_shards_of(i) * (replicated ? l.tp_of(i) : 1));
}

// Where a rank stands in its group along d (in rank order): for the dp x cp group
// (Megatron-Core's data-parallel group with context parallelism) and the expert-data-parallel
// group, the share of the distributed optimizer's flat buffer it owns.
std::int64_t place_in(const Layout& layout, Dim d, std::int64_t rank) {
  const auto group = layout.collective_group(d, rank);
  return std::find(group.begin(), group.end(), rank) - group.begin();
}

// A new rank: its coordinates, and which shard and optimizer share of tensor i it takes.
struct NewRank {
  RankCoord at;
  std::int64_t data_shard = 0;
  std::int64_t expert_data_shard = 0;
  std::int64_t tp(const LayoutShards& l, std::size_t i) const {
    return at[l.apart(i) ? Dim::kETP : Dim::kTP];
  }
  // Its share of tensor i's elements in the distributed optimizer's buffer, counted from the
  // tensor's first.
  Interval owned(const LayoutShards& l, std::size_t i) const;
};

// What one new rank needs of one tensor, as rectangles, and the fraction of them it reads (1 over
// the ranks sharing the copy).
struct Need {
  std::vector<Rect> weights;
  std::vector<Rect> optimizer;
  double weight_share = 1;
  double optimizer_share = 1;
};

// Parameter i's elements among share `share` of `buffer`, counted from the parameter's first.
Interval local_share(const FlatBuffer& buffer, std::size_t i, std::int64_t share,
                     std::int64_t shares) {
  const Interval at = buffer.of(i);
  const Interval part = buffer.owned(share, shares).intersect(at);
  if (part.size() == 0) return {};
  return {part.begin - at.begin, part.end - at.begin};
}

Interval NewRank::owned(const LayoutShards& l, std::size_t i) const {
  const std::int64_t share = l.apart(i) ? expert_data_shard : data_shard;
  return local_share(l.buffer_of(i, at[Dim::kPP]), i, share, l.data_shards_of(i));
}

Need need_of(const LayoutShards& to, std::size_t i, const NewRank& r) {
  const ParamSpec& spec = to.params[i];
  const TpShard& shard = to.placed[i].shards[static_cast<std::size_t>(r.tp(to, i))];
  Need n;
  n.weights = {shard_rect(spec, shard)};
  n.weight_share = 1.0 / sharers(to, i);
  if (to.plan.distributed_optimizer()) {
    const Interval local = r.owned(to, i);
    if (local.size() > 0) n.optimizer = flat_rects(spec, shard, local);
  } else {
    n.optimizer = n.weights;
    n.optimizer_share = n.weight_share;
  }
  return n;
}

// Reads of tensor i for `need` from the old layout's files.
void read_from(const LayoutShards& from, std::size_t i, const Need& need, RankConversion& rc) {
  const ParamSpec& spec = from.params[i];
  const PlacedParam& old = from.placed[i];
  if (old.stages.empty()) return;
  const std::int64_t s = old.stages.front();
  const std::int64_t ep = from.apart(i) ? old.ep_rank : -1;
  const std::int64_t shares = from.data_shards_of(i);
  for (std::int64_t t = 0; t < from.tp_of(i); ++t) {
    const TpShard& shard = old.shards[static_cast<std::size_t>(t)];
    const Rect saved = shard_rect(spec, shard);
    // A replicated tensor is saved once, by TP rank 0.
    if (spec.split == TpSplit::kReplicated && t > 0) break;
    const double w = static_cast<double>(overlap(need.weights, {saved})) * kCheckpointWeightBytes *
                     need.weight_share;
    if (w > 0) rc.reads[model_file(s, t, ep)] += w;
    if (need.optimizer.empty()) continue;
    if (!from.plan.distributed_optimizer()) {
      const double o = static_cast<double>(overlap(need.optimizer, {saved})) *
                       kCheckpointOptimizerBytes * need.optimizer_share;
      if (o > 0) rc.reads[optimizer_file(s, t, ep, -1)] += o;
      continue;
    }
    const FlatBuffer& buf = from.buffer_of(i, s);
    for (std::int64_t d = 0; d < shares; ++d) {
      const Interval local = local_share(buf, i, d, shares);
      if (local.size() == 0) continue;
      const double o =
          static_cast<double>(overlap(need.optimizer, flat_rects(spec, shard, local))) *
          kCheckpointOptimizerBytes * need.optimizer_share;
      if (o > 0) rc.reads[optimizer_file(s, t, ep, d)] += o;
    }
  }
}

// Bytes rank c writes when saving at layout `to` (fully parallel: each rank of a group sharing a
// copy writes its share), and what it receives from that group after a fully parallel load.
void written_and_exchanged(const LayoutShards& to, const NewRank& r, RankConversion& rc) {
  for (std::size_t i = 0; i < to.placed.size(); ++i) {
    const PlacedParam& p = to.placed[i];
    if (!p.held_by(r.at[Dim::kPP], r.at[Dim::kEP])) continue;
    const double k = sharers(to, i);
    const auto shard = static_cast<double>(p.shard_numel());
    const double state = to.plan.distributed_optimizer()
                             ? kCheckpointWeightBytes
                             : kCheckpointWeightBytes + kCheckpointOptimizerBytes;
    const double received = shard * state * (k - 1) / k;
    rc.exchanged_bytes += received;
    if (to.apart(i)) rc.expert_exchanged_bytes += received;
    rc.written_bytes += shard * state / k;
    if (!to.plan.distributed_optimizer()) continue;
    rc.written_bytes += static_cast<double>(r.owned(to, i).size()) * kCheckpointOptimizerBytes;
  }
}

// Bytes per second of a point-to-point exchange within the group along d of rank 0: NVLink where
// the group stays in a node, the NIC where it crosses nodes (a TP group's stays in its node).
double exchange_bandwidth(const Layout& layout, Dim d, const Platform& platform) {
  const std::int64_t per_node = std::max<std::int64_t>(1, platform.node.gpus_per_node);
  const GroupSpan span = group_span(layout.collective_group(d, 0), per_node);
  return span.in_one_node() ? platform.nvlink_link_bandwidth() : platform.nic_link_bandwidth();
}

void price(ConversionPlan& plan, const LayoutShards& to, const Platform& platform) {
  const Layout layout(to.plan);
  const std::int64_t per_node = std::max<std::int64_t>(1, platform.node.gpus_per_node);
  const double dense_bw = exchange_bandwidth(layout, Dim::kDP, platform);
  const double expert_bw = exchange_bandwidth(layout, Dim::kEDP, platform);
  std::map<std::int64_t, double> node_bytes;
  plan.exchange_s = 0;
  for (const auto& r : plan.ranks) {
    node_bytes[r.rank / per_node] += r.read_bytes;
    const double s = (r.exchanged_bytes - r.expert_exchanged_bytes) / dense_bw +
                     r.expert_exchanged_bytes / expert_bw;
    plan.exchange_s = std::max(plan.exchange_s, s);
  }
  double busiest = 0;
  for (const auto& [node, bytes] : node_bytes) busiest = std::max(busiest, bytes);
  plan.storage_bandwidth = platform.storage.read_bandwidth;
  plan.read_s = busiest / plan.storage_bandwidth;
}

}  // namespace

ConversionPlan plan_conversion(const LayoutShards& from, const LayoutShards& to,
                               const Platform& platform) {
  ConversionPlan plan;
  plan.checkpoint_bytes = checkpoint_bytes(from);
  plan.new_checkpoint_bytes = checkpoint_bytes(to);
  const Layout layout(to.plan);
  for (std::int64_t rank = 0; rank < layout.world_size(); ++rank) {
    const NewRank r{layout.coord(rank), place_in(layout, Dim::kDP, rank),
                    place_in(layout, Dim::kEDP, rank)};
    RankConversion rc;
    rc.rank = rank;
    rc.tp = r.at[Dim::kTP];
    rc.pp = r.at[Dim::kPP];
    rc.dp = r.at[Dim::kDP];
    rc.cp = r.at[Dim::kCP];
    rc.ep = r.at[Dim::kEP];
    rc.etp = r.at[Dim::kETP];
    rc.data_shard = r.data_shard;
    rc.expert_data_shard = r.expert_data_shard;
    for (std::size_t i = 0; i < to.placed.size(); ++i) {
      if (!to.placed[i].held_by(r.at[Dim::kPP], r.at[Dim::kEP])) continue;
      read_from(from, i, need_of(to, i, r), rc);
    }
    for (const auto& [file, bytes] : rc.reads) rc.read_bytes += bytes;
    written_and_exchanged(to, r, rc);
    plan.read_bytes += rc.read_bytes;
    plan.written_bytes += rc.written_bytes;
    plan.ranks.push_back(std::move(rc));
  }
  price(plan, to, platform);
  return plan;
}

}  // namespace trainsim
