#pragma once
// Where each rank of a plan sits: the plan's parallel dimensions in its rank order (Megatron-LM's
// "tp-cp-ep-dp-pp" by default, TP innermost so that a TP group shares a node's NVSwitch). A rank
// is a GPU's number on the cluster. Every group of ranks the simulator uses comes from here.
#include <array>
#include <cassert>
#include <cstdint>
#include <vector>

#include "sim/plan/dims.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// A rank's coordinate along every dimension.
struct RankCoord {
  std::array<std::int64_t, kNumDims> at{};
  std::int64_t operator[](Dim d) const { return at[index_of(d)]; }
  std::int64_t& operator[](Dim d) { return at[index_of(d)]; }
};

class Layout {
 public:
  /// The plan's layout. Ranks enumerate the dense layers' dimensions (tp, cp, dp, pp) in the
  /// plan's order; the expert layers re-divide the same ranks as etp x ep x edp x pp in that
  /// order (Megatron-Core's expert rank generator, with no context parallelism), which is where
  /// the EP and EDP groups come from.
  explicit Layout(const Plan& plan);

  /// Size along d; for the stage-wide group (derived, no coordinate of its own) its members.
  std::int64_t size(Dim d) const { return d == Dim::kStage ? collective_size(d) : factor(d).size; }
  std::int64_t world_size() const { return world_; }
  const RankOrder& order() const { return order_; }

  RankCoord coord(std::int64_t rank) const;
  std::int64_t coord(std::int64_t rank, Dim d) const {
    assert(d != Dim::kStage);
    return rank / stride(d) % size(d);
  }
  /// The rank at coordinates along the dense dimensions (tp, cp, dp, pp).
  std::int64_t rank(const RankCoord& c) const;
  /// The rank `steps` further along d (wrapping around), other coordinates kept.
  std::int64_t neighbour(std::int64_t rank, Dim d, std::int64_t steps) const;

  /// `rank`'s group along d: the ranks that differ from it in d only, by their coordinate d.
  std::vector<std::int64_t> group(Dim d, std::int64_t rank) const;
  /// `rank`'s group over several dimensions: the ranks that differ from it in those only,
  /// ascending.
  std::vector<std::int64_t> group(const std::vector<Dim>& dims, std::int64_t rank) const;

  /// The dimensions a collective along d runs over: data parallelism's gradient reductions and
  /// parameter gathers over dp x cp (Megatron-LM's data-parallel group with context
  /// parallelism: every context-parallel rank holds the whole layer's weights and gradients of
  /// its part of the sequence); a distributed-optimizer instance's over its share of dp x cp;
  /// the stage-wide group's over tp x cp x dp; every other dimension's over its own.
  static std::vector<Dim> collective_dims(Dim d);
  /// The dimensions that have collective groups, the derived ones included.
  static constexpr std::array<Dim, 13> kGroupDims = {
      Dim::kTP,       Dim::kCP,    Dim::kEP,      Dim::kDP,      Dim::kEDP,
      Dim::kETP,      Dim::kStage, Dim::kIntraDP, Dim::kInterDP, Dim::kIntraEDP,
      Dim::kInterEDP, Dim::kCPA2A, Dim::kCPP2P};
  /// Members of a collective group along d: the product of collective_dims(d)'s sizes.
  std::int64_t collective_size(Dim d) const;
  /// `rank`'s collective group along d (group(collective_dims(d), rank)).
  std::vector<std::int64_t> collective_group(Dim d, std::int64_t rank) const {
    return group(collective_dims(d), rank);
  }
  /// Every collective group along d among the ranks of pipeline stage `stage`, by their lowest
  /// rank.
  std::vector<std::vector<std::int64_t>> groups_in_stage(Dim d, std::int64_t stage) const;
  /// The ranks of pipeline stage `stage`, ascending.
  std::vector<std::int64_t> stage_ranks(std::int64_t stage) const;
  /// The offsets from a stage's leader to the ranks of its stage whose coordinate along every
  /// dimension in `fixed` is 0 (with `fixed` = {d}: the leader's group along d moved onto each
  /// group of the stage along d), one per residue modulo `modulus`, the least of each. Walks no
  /// list of ranks: what a rank's position decides modulo a repeating unit of the cluster is
  /// decided for all ranks by these few.
  std::vector<std::int64_t> offset_residues(const std::vector<Dim>& fixed,
                                            std::int64_t modulus) const;
  /// The stage's first rank: coordinate 0 along every dimension but the pipeline.
  std::int64_t stage_leader(std::int64_t stage) const;
  /// The ranks at `rank`'s coordinates in each of pipeline stages `stages` (ascending): its
  /// embedding group when they are the stages holding the word embedding or a copy of it.
  std::vector<std::int64_t> pipeline_peers(std::int64_t rank,
                                           const std::vector<std::int64_t>& stages) const;

 private:
  // Calls visit(offset) with the offset from a stage's leader of every rank of that stage whose
  // coordinate along each dimension in `fixed` is 0 (the same offsets in every stage).
  template <class Visit>
  void for_each_offset(const std::vector<Dim>& fixed, Visit&& visit) const;

  // Sizes and strides along the five ordered dimensions, in the dense or the expert layers.
  struct Radix {
    std::array<std::int64_t, kNumOrderDims> size{};
    std::array<std::int64_t, kNumOrderDims> stride{};
  };
  // The expert dimensions (EP, EDP, ETP and EDP's instance split) live in the expert radix, EDP
  // in its data-parallel slot and ETP in its tensor-parallel one.
  static bool is_expert(Dim d) {
    return d == Dim::kEP || d == Dim::kEDP || d == Dim::kETP || d == Dim::kIntraEDP ||
           d == Dim::kInterEDP;
  }
  // The distributed-optimizer instances split a data-parallel slot in two: its low digits (the
  // ranks of one instance) and its high ones (which instance); hierarchical CP splits the CP
  // slot so: its low digits the a2a groups, its high ones the p2p rings.
  static bool is_intra(Dim d) {
    return d == Dim::kIntraDP || d == Dim::kIntraEDP || d == Dim::kCPA2A;
  }
  static bool is_inter(Dim d) {
    return d == Dim::kInterDP || d == Dim::kInterEDP || d == Dim::kCPP2P;
  }
  static std::size_t slot(Dim d) {
    assert(d != Dim::kStage && d != Dim::kEmbedding);
    if (d == Dim::kETP) return index_of(Dim::kTP);
    if (d == Dim::kCPA2A || d == Dim::kCPP2P) return index_of(Dim::kCP);
    if (d == Dim::kEDP || is_intra(d) || is_inter(d)) return index_of(Dim::kDP);
    return index_of(d);
  }
  // How many values the high digits of a split slot take (instances, or p2p ring ranks).
  std::int64_t high_digits(std::size_t slot_index) const {
    return slot_index == index_of(Dim::kCP) ? cp_rings_ : instances_;
  }
  const Radix& radix(Dim d) const { return is_expert(d) ? expert_ : dense_; }
  // A dimension's size and stride: a slot of its radix, or a part of a data-parallel slot.
  struct Factor {
    std::int64_t size;
    std::int64_t stride;
  };
  Factor factor(Dim d) const {
    const Radix& r = radix(d);
    const Factor whole{r.size[slot(d)], r.stride[slot(d)]};
    if (!is_intra(d) && !is_inter(d)) return whole;
    if ((d == Dim::kCPA2A || d == Dim::kCPP2P) && cp_rings_ == 0) return {1, whole.stride};
    const std::int64_t high = high_digits(slot(d));
    assert(high > 0 && whole.size % high == 0);
    if (is_intra(d)) return {whole.size / high, whole.stride};
    return {high, whole.stride * (whole.size / high)};
  }
  std::int64_t stride(Dim d) const { return factor(d).stride; }

  RankOrder order_;
  Radix dense_;
  Radix expert_;
  bool has_edp_ = false;        // expert parallelism on: expert gradients reduced apart
  std::int64_t instances_ = 1;  // distributed-optimizer instances
  std::int64_t cp_rings_ = 0;   // a2a+p2p: the ring's size (CP's high digits); 0: no split
  std::int64_t world_ = 1;
};

/// How a group of ranks lies on nodes of `gpus_per_node` GPUs.
struct GroupSpan {
  std::int64_t nodes = 0;
  std::int64_t per_node = 0;  // members on each node; 0 when nodes hold different counts
  bool in_one_node() const { return nodes == 1; }
  bool one_per_node() const { return per_node == 1; }
};
GroupSpan group_span(const std::vector<std::int64_t>& ranks, std::int64_t gpus_per_node);

}  // namespace trainsim
