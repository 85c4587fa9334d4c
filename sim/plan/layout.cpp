#include "sim/plan/layout.hpp"

#include <algorithm>
#include <cassert>
#include <map>

namespace trainsim {

namespace {

using Sizes = std::array<std::int64_t, kNumOrderDims>;

Sizes sizes(std::int64_t tp, std::int64_t cp, std::int64_t ep, std::int64_t dp, std::int64_t pp) {
  Sizes s{};
  s[index_of(Dim::kTP)] = tp;
  s[index_of(Dim::kCP)] = cp;
  s[index_of(Dim::kEP)] = ep;
  s[index_of(Dim::kDP)] = dp;
  s[index_of(Dim::kPP)] = pp;
  return s;
}

}  // namespace

Layout::Layout(const Plan& plan) : order_(plan.rank_order) {
  dense_.size = sizes(plan.tp, plan.cp, 1, plan.dp, plan.pp);
  const std::int64_t etp = plan.expert_tp();
  const std::int64_t expert_rest = plan.world_size() / (etp * plan.ep * plan.pp);
  expert_.size = sizes(etp, 1, plan.ep, std::max<std::int64_t>(expert_rest, 1), plan.pp);
  has_edp_ = plan.ep > 1;
  instances_ = plan.num_distributed_optimizer_instances;
  if (plan.cp_comm == CpComm::kA2AP2P) cp_rings_ = plan.cp_ring_size();
  for (Radix* r : {&dense_, &expert_}) {
    std::int64_t stride = 1;
    for (const Dim d : order_) {
      assert(r->size[index_of(d)] >= 1);
      r->stride[index_of(d)] = stride;
      stride *= r->size[index_of(d)];
    }
    if (r == &dense_) world_ = stride;
  }
}

RankCoord Layout::coord(std::int64_t rank) const {
  RankCoord c;
  for (std::size_t i = 0; i < kNumDims; ++i) {
    const Dim d = static_cast<Dim>(i);
    if (d != Dim::kStage && d != Dim::kEmbedding) c.at[i] = coord(rank, d);
  }
  return c;
}

std::int64_t Layout::rank(const RankCoord& c) const {
  std::int64_t r = 0;
  for (const Dim d : order_) {
    assert(c[d] >= 0 && c[d] < size(d));
    if (!is_expert(d)) r += c[d] * stride(d);
  }
  return r;
}

std::int64_t Layout::neighbour(std::int64_t rank, Dim d, std::int64_t steps) const {
  const auto n = size(d);
  const auto here = coord(rank, d);
  const auto there = ((here + steps) % n + n) % n;
  return rank + (there - here) * stride(d);
}

std::vector<std::int64_t> Layout::group(Dim d, std::int64_t rank) const {
  const auto first = rank - coord(rank, d) * stride(d);
  std::vector<std::int64_t> g;
  g.reserve(static_cast<std::size_t>(size(d)));
  for (std::int64_t i = 0; i < size(d); ++i) g.push_back(first + i * stride(d));
  return g;
}

template <class Visit>
void Layout::for_each_offset(const std::vector<Dim>& fixed, Visit&& visit) const {
  // Offsets within a stage walk the expert radix when an expert dimension is held fixed.
  const bool expert = std::any_of(fixed.begin(), fixed.end(), is_expert);
  const Radix& r = expert ? expert_ : dense_;
  std::vector<Factor> free;
  for (const Dim d : order_) {
    if (d == Dim::kPP) continue;
    bool whole = false, low = false, high = false;  // which digits of the slot are held
    for (const Dim f : fixed) {
      if (slot(f) != index_of(d) || is_expert(f) != expert) continue;
      if (factor(f).size == 1) continue;  // a level of an unsplit CP slot holds nothing
      (is_intra(f) ? low : is_inter(f) ? high : whole) = true;
    }
    if (whole || (low && high)) continue;
    const Factor all{r.size[index_of(d)], r.stride[index_of(d)]};
    const std::int64_t split = high_digits(index_of(d));
    if (low) {
      free.push_back({split, all.stride * (all.size / split)});
    } else if (high) {
      free.push_back({all.size / split, all.stride});
    } else {
      free.push_back(all);
    }
  }
  std::int64_t count = 1;
  for (const Factor& f : free) count *= f.size;
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t rest = i, offset = 0;
    for (const Factor& f : free) {
      offset += rest % f.size * f.stride;
      rest /= f.size;
    }
    visit(offset);
  }
}

std::vector<std::int64_t> Layout::stage_ranks(std::int64_t stage) const {
  std::vector<std::int64_t> ranks;
  ranks.reserve(static_cast<std::size_t>(world_ / size(Dim::kPP)));
  const auto leader = stage_leader(stage);
  for_each_offset({}, [&](std::int64_t offset) { ranks.push_back(leader + offset); });
  std::sort(ranks.begin(), ranks.end());  // the pipeline need not be outermost
  return ranks;
}

std::vector<std::int64_t> Layout::group(const std::vector<Dim>& dims, std::int64_t rank) const {
  std::vector<std::int64_t> g{rank};
  for (const Dim d : dims) {
    const auto first = -coord(rank, d) * stride(d);
    std::vector<std::int64_t> next;
    next.reserve(g.size() * static_cast<std::size_t>(size(d)));
    for (const auto r : g) {
      for (std::int64_t i = 0; i < size(d); ++i) next.push_back(r + first + i * stride(d));
    }
    g = std::move(next);
  }
  std::sort(g.begin(), g.end());
  return g;
}

std::vector<Dim> Layout::collective_dims(Dim d) {
  if (d == Dim::kDP) return {Dim::kDP, Dim::kCP};
  if (d == Dim::kIntraDP) return {Dim::kIntraDP, Dim::kCP};
  if (d == Dim::kStage) return {Dim::kTP, Dim::kCP, Dim::kDP};
  return {d};
}

std::int64_t Layout::collective_size(Dim d) const {
  if (d == Dim::kEDP && !has_edp_) return 1;  // without EP, expert gradients reduce over DP
  const bool dp_split = (is_intra(d) || is_inter(d)) && slot(d) == index_of(Dim::kDP);
  if (dp_split && (instances_ == 1 || (is_expert(d) && !has_edp_))) {
    return 1;  // one distributed-optimizer instance: the DP and EDP groups serve
  }
  // Expert TP as TP: its collectives run over TP's own group.
  if (d == Dim::kETP && size(Dim::kETP) == size(Dim::kTP)) return 1;
  std::int64_t n = 1;
  for (const Dim e : collective_dims(d)) n *= size(e);
  return n;
}

std::vector<std::vector<std::int64_t>> Layout::groups_in_stage(Dim d, std::int64_t stage) const {
  if (d == Dim::kPP) return {group(d, stage_leader(stage))};
  const auto dims = collective_dims(d);
  std::vector<std::vector<std::int64_t>> out;
  for (const auto r : stage_ranks(stage)) {
    bool lowest = true;
    for (const Dim e : dims) lowest = lowest && coord(r, e) == 0;
    if (lowest) out.push_back(group(dims, r));
  }
  return out;
}

std::vector<std::int64_t> Layout::offset_residues(const std::vector<Dim>& fixed,
                                                  std::int64_t modulus) const {
  assert(modulus > 0);
  std::vector<std::int64_t> least(static_cast<std::size_t>(modulus), -1);
  for_each_offset(fixed, [&](std::int64_t offset) {
    auto& slot = least[static_cast<std::size_t>(offset % modulus)];
    if (slot < 0 || offset < slot) slot = offset;
  });
  std::vector<std::int64_t> out;
  for (const auto o : least) {
    if (o >= 0) out.push_back(o);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::int64_t Layout::stage_leader(std::int64_t stage) const {
  return stage * stride(Dim::kPP);
}

std::vector<std::int64_t> Layout::pipeline_peers(std::int64_t rank,
                                                 const std::vector<std::int64_t>& stages) const {
  const std::int64_t offset = rank - stage_leader(coord(rank, Dim::kPP));
  std::vector<std::int64_t> out;
  for (const auto s : stages) out.push_back(stage_leader(s) + offset);
  return out;
}

GroupSpan group_span(const std::vector<std::int64_t>& ranks, std::int64_t gpus_per_node) {
  std::map<std::int64_t, std::int64_t> per_node;
  for (const auto r : ranks) ++per_node[r / gpus_per_node];
  GroupSpan span;
  span.nodes = static_cast<std::int64_t>(per_node.size());
  span.per_node = per_node.empty() ? 0 : per_node.begin()->second;
  for (const auto& [node, count] : per_node) {
    if (count != span.per_node) span.per_node = 0;
  }
  return span;
}

}  // namespace trainsim
