#pragma once
// Where every tensor of a model lives under one parallel layout: its shard on each TP rank (the
// slice of the padded global tensor, and how many of its rows are the vocabulary's), the
// pipeline stages that hold it (from the framework's own partition rule), and, with a
// distributed optimizer (ZeRO 1 and up), its offsets in the stage's flat buffer, of which each
// DP rank owns one contiguous share.
#include <cstdint>
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
  std::vector<TpShard> shards;  // one per TP rank
  std::int64_t shard_numel() const;
  bool held_by(std::int64_t stage) const;
};

/// A pipeline stage's flat parameter buffer as the distributed optimizer shards it over DP (with
/// context parallelism over dp x cp, Megatron-Core's data-parallel group with CP; n below).
/// Megatron-LM (param_and_grad_buffer.py, one bucket: no --overlap-grad-reduce): parameters in
/// reverse order of registration, each starting at a multiple of 64 elements, the end padded to a
/// multiple of lcm(n, 128). Other frameworks: registration order, no alignment, the end padded
/// to a multiple of n.
struct FlatBuffer {
  std::int64_t size = 0;         // elements, padding included
  std::vector<Interval> params;  // per parameter index; empty for parameters of other stages
  /// Share d of n: [d x size / n, (d + 1) x size / n).
  Interval owned(std::int64_t share, std::int64_t shares) const;
};

struct LayoutShards {
  Plan plan;
  Partition partition;
  std::int64_t vocab_multiple = 1;  // the framework's divisor (x tp)
  std::int64_t padded_vocab = 0;
  std::vector<ParamSpec> params;
  std::vector<PlacedParam> placed;  // per parameter
  std::vector<FlatBuffer> buffers;  // per physical stage; empty without a distributed optimizer

  /// Elements a rank of `stage` holds (its TP shards of the stage's tensors, padding included).
  std::int64_t stage_shard_numel(std::int64_t stage) const;
};

/// The shards of every tensor of `model` under `plan` (its partition from the plan's rule;
/// `origin` names the flag at fault when the rule refuses the layout).
LayoutShards shard_layout(const Model& model, const Platform& platform, const Plan& plan,
                          const PlanOrigin& origin);

/// A shard's slice, as text: "[25139, 16] rows 25139-50277 (25138 + 1 padding)".
std::string shape_text(const std::vector<std::int64_t>& shape);

}  // namespace trainsim
