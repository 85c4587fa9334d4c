#pragma once
// Where every tensor of a model lives under one parallel layout: its shard on each TP rank (the
// slice of the padded global tensor, and how many of its rows are the vocabulary's), the
// pipeline stages that hold it (from the framework's own partition rule), for a routed expert's
// tensor the EP rank holding it, and, with a distributed optimizer (ZeRO 1 and up), its offsets in
// the stage's flat buffer, of which each DP rank owns one contiguous share.
#include <cstdint>
#include <map>
#include <vector>

#include "sim/model/model.hpp"
#include "sim/plan/partition.hpp"
#include "sim/plan/plan.hpp"
#include "sim/platform/platform.hpp"
#include "sim/reshard/parameters.hpp"

namespace trainsim {

struct Interval {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end > begin ? end - begin : 0; }
  Interval intersect(const Interval& o) const;
};

/// One TP rank's shard, in coordinates of the padded global tensor.
struct TpShard {
  std::vector<std::int64_t> shape;  // the shard's own shape
  Interval split;                   // its indices along the split dimension (all of dim 0 if
                                    // replicated)
  std::int64_t real = 0;            // of those, rows of the model rather than padding
};

struct PlacedParam {
  std::vector<std::int64_t> padded_shape;
  /// Physical pipeline stages holding it: one, or for a tied embedding the first and the last.
  std::vector<std::int64_t> stages;
  /// The EP rank holding a routed expert's tensor (expert e of E on rank e / (E / ep), as
  /// Megatron-Core numbers its local experts); -1 for a tensor every EP rank holds.
  std::int64_t ep_rank = -1;
  std::vector<TpShard> shards;  // one per TP rank (per expert-TP rank for an expert's tensor)
  std::int64_t shard_numel() const;
  bool held_by(std::int64_t stage) const;
  /// Held by the ranks of `stage` at EP rank `ep`.
  bool held_by(std::int64_t stage, std::int64_t ep) const;
};

/// A pipeline stage's flat parameter buffer as the distributed optimizer shards it over DP (with
/// context parallelism over dp x cp, Megatron-Core's data-parallel group with CP; n below).
/// Megatron-LM (param_and_grad_buffer.py, one bucket: no --overlap-grad-reduce): parameters in
/// reverse order of registration, each starting at a multiple of 64 elements, the end padded to a
/// multiple of lcm(n, 128). Other frameworks: registration order, no alignment, the end padded
/// to a multiple of n.
///
/// With expert parallelism, or expert TP unlike TP, Megatron-Core keeps the routed experts'
/// tensors apart (`allreduce` False: its expert_parallel_buffers): each EP rank of a stage has a
/// second flat buffer of its own experts, built by the same rule and sharded over the
/// expert-data-parallel group.
struct FlatBuffer {
  std::int64_t size = 0;                   // elements, padding included
  std::map<std::size_t, Interval> params;  // by parameter index, the buffer's parameters only
  /// Share d of n: [d x size / n, (d + 1) x size / n).
  Interval owned(std::int64_t share, std::int64_t shares) const;
  /// Parameter i's elements; empty if the buffer does not hold it.
  Interval of(std::size_t i) const;
};

struct LayoutShards {
  Plan plan;
  Partition partition;
  std::int64_t vocab_multiple = 1;  // the framework's divisor (x tp)
  std::int64_t padded_vocab = 0;
  std::vector<ParamSpec> params;
  std::vector<PlacedParam> placed;  // per parameter
  /// Per physical stage; empty without a distributed optimizer. With experts apart, the
  /// parameters every EP rank holds; the experts' are in expert_buffers.
  std::vector<FlatBuffer> buffers;
  /// Per physical stage and EP rank (stage x ep + ep rank), with experts apart and a distributed
  /// optimizer; empty otherwise.
  std::vector<FlatBuffer> expert_buffers;

  /// Whether the routed experts have process groups and buffers of their own: Megatron-Core's
  /// rule, expert parallelism or an expert TP unlike TP.
  bool experts_apart() const { return plan.ep > 1 || plan.expert_tp() != plan.tp; }
  /// Whether parameter i is a routed expert's, kept apart.
  bool apart(std::size_t i) const { return params[i].is_expert() && experts_apart(); }
  /// The TP size splitting parameter i: expert TP for a routed expert's tensor, TP otherwise.
  std::int64_t tp_of(std::size_t i) const;
  /// The ranks sharing one copy of parameter i's shards, over which its gradients are reduced
  /// and its optimizer state sharded: dp x cp, or a routed expert's expert-data-parallel group.
  std::int64_t data_shards_of(std::size_t i) const;
  /// The expert buffer of `stage`'s EP rank `ep` (experts apart, a distributed optimizer).
  const FlatBuffer& expert_buffer(std::int64_t stage, std::int64_t ep) const;
  /// The flat buffer holding parameter i on `stage` (for an expert's, its EP rank's).
  const FlatBuffer& buffer_of(std::size_t i, std::int64_t stage) const;

  /// Elements a rank of `stage` at EP rank `ep` holds (its TP shards of the stage's tensors,
  /// padding included): its routed experts', and the others'. (Without experts apart the two
  /// share dp x cp: expert_data_shards() is data_shards().)
  struct Numel {
    std::int64_t shared = 0;
    std::int64_t experts = 0;
  };
  Numel stage_shard_numel(std::int64_t stage, std::int64_t ep) const;
};

/// The shards of every tensor of `model` under `plan` (its partition from the plan's rule;
/// `origin` names the flag at fault when the rule refuses the layout).
LayoutShards shard_layout(const Model& model, const Platform& platform, const Plan& plan,
                          const PlanOrigin& origin);

/// A shard's slice, as text: "[25139, 16] rows 25139-50277 (25138 + 1 padding)".
std::string shape_text(const std::vector<std::int64_t>& shape);

}  // namespace trainsim
