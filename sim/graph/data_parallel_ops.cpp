// The data-parallel side of a rank's program: Megatron-Core's gradient reductions (after the
// last backward or bucket by bucket during it), the distributed optimizer's parameter gathers
// (after the step or during the first forwards) and ZeRO-3's gathers before every pass, on the
// DP group and, for expert parameters, on the expert-data-parallel group.
#include <cassert>
#include <optional>
#include <vector>

#include "sim/graph/builder.hpp"
#include "sim/graph/rank_program_writer.hpp"

namespace trainsim::graph_detail {

// A data-parallel collective on a chunk's parameters or gradients, `bytes` in all: the dense
// part on the `dense` group and, with expert parallelism, the experts' part on the `experts`
// group, each part divided by `shards` (its own). Returns the last op issued, if any.
std::optional<Index> RankProgramWriter::dense_and_expert(Stream stream, CollectiveKind kind,
                                                         DpGroups groups, std::int64_t chunk,
                                                         double bytes, std::int64_t count,
                                                         std::int64_t mb, const Deps& deps) {
  const StageCost& sc = cost(chunk);
  const double expert = sc.params_per_gpu > 0 ? static_cast<double>(sc.expert_params_per_gpu) /
                                                    static_cast<double>(sc.params_per_gpu)
                                              : 0.0;
  const std::int32_t dense = groups_[index_of(groups.dense)];
  const std::int32_t experts = groups_[index_of(groups.experts)];
  std::optional<Index> last;
  if (dense >= 0 && (expert < 1.0 || experts < 0)) {
    last = b_.collective(stream, CommKind::kDP, kind, dense,
                         bytes * (1.0 - expert) / groups.dense_shards, count, mb, deps);
  }
  if (experts >= 0 && (expert > 0.0 || !last)) {
    last = b_.collective(stream, CommKind::kDP, kind, experts,
                         bytes * expert / groups.expert_shards, count, mb, deps);
  }
  return last;
}

// A gradient reduction or parameter gather over data parallelism: on the DP group (and, for
// expert parameters, the expert-data-parallel group, Megatron-Core's
// expert_data_parallel_group). With several distributed-optimizer instances, within an instance
// (the intra-instance groups); a gradient reduce-scatter is then followed by the all-reduce of
// each rank's reduced shard across the instances (Megatron-Core's inter-instance group).
Index RankProgramWriter::dp_collective(Stream stream, CollectiveKind kind, std::int64_t chunk,
                                       double bytes, std::int64_t count, std::int64_t mb,
                                       const Deps& deps) {
  if (plan_.num_distributed_optimizer_instances == 1) {
    const auto last =
        dense_and_expert(stream, kind, {Dim::kDP, Dim::kEDP}, chunk, bytes, count, mb, deps);
    assert(last);
    return *last;
  }
  assert(kind != CollectiveKind::kAllReduce);  // instances need the distributed optimizer
  const auto within = dense_and_expert(stream, kind, {Dim::kIntraDP, Dim::kIntraEDP}, chunk, bytes,
                                       count, mb, deps);
  assert(within);  // the rules keep an instance's dense group 2 ranks or more
  if (kind != CollectiveKind::kReduceScatter) return *within;
  const DpGroups across{Dim::kInterDP, Dim::kInterEDP,
                        static_cast<double>(layout_.collective_size(Dim::kIntraDP)),
                        static_cast<double>(layout_.collective_size(Dim::kIntraEDP))};
  const auto last = dense_and_expert(stream, CollectiveKind::kAllReduce, across, chunk, bytes,
                                     count, mb, {*within});
  assert(last);
  return *last;
}

// --overlap-param-gather: the distributed optimizer's parameter all-gathers run during the
// first forward of each chunk, bucket by bucket, the forward of bucket k's layers waiting for
// its gather. Without interleaving Megatron-Core's forward pre-hooks issue them: starting
// bucket k dispatches the gather of bucket k + 1 (the DP stream runs them in order). With
// interleaving Megatron-LM aligns them (--align-param-gather, its default): all of chunk 0's
// gathers at the start of the step, and all of chunk c + 1's when the forward of virtual
// micro-batch k runs with k + stage the first micro-batch of chunk c.
bool RankProgramWriter::gathers_during_forward(std::int64_t chunk) const {
  return shares_trained_params(chunk) && plan_.overlap_param_gather && plan_.zero < 3 &&
         !gathered_.contains(chunk);
}

Index RankProgramWriter::param_gather(std::int64_t chunk, std::int64_t mb, Deps after) {
  const double bytes = param_bytes(chunk) / static_cast<double>(buckets(chunk));
  return dp_collective(Stream::kDP, CollectiveKind::kAllGather, chunk, bytes, 1, mb, after);
}

// Interleaved: dispatch all of a chunk's bucket gathers, after `after` (the dispatch point).
void RankProgramWriter::dispatch_param_gathers(std::int64_t chunk, const Deps& after) {
  if (chunk >= plan_.vp || !gathers_during_forward(chunk) || dispatched_.contains(chunk)) return;
  auto& list = dispatched_[chunk];
  for (std::int64_t k = 0; k < buckets(chunk); ++k) list.push_back(param_gather(chunk, -1, after));
}

// Called before writing each forward (virtual micro-batch `vmb` of this stage).
void RankProgramWriter::align_param_gathers(std::int64_t vmb) {
  if (plan_.schedule != ScheduleKind::kInterleaved || !plan_.overlap_param_gather) return;
  const std::int64_t total = static_cast<std::int64_t>(table_.size());
  if (vmb == 0) dispatch_param_gathers(0, {});
  const std::int64_t ahead = vmb + stage_;
  if (ahead >= total || table_[static_cast<std::size_t>(ahead)].microbatch != 0) return;
  Deps after;
  if (last_compute_) after.push_back(*last_compute_);
  dispatch_param_gathers(table_[static_cast<std::size_t>(ahead)].chunk + 1, after);
}

Index RankProgramWriter::forward_with_param_gather(std::int64_t mb, std::int64_t chunk,
                                                   const PassCost& pass, const Deps& deps) {
  gathered_.insert(chunk);
  const auto n = buckets(chunk);
  std::vector<Index> gathers;
  if (auto it = dispatched_.find(chunk); it != dispatched_.end()) {
    gathers = it->second;
  } else {
    gathers.push_back(param_gather(chunk, mb, {}));
    if (n > 1) gathers.push_back(param_gather(chunk, mb, {}));
  }
  Index out = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const PassCost piece = pass_piece(pass, k, n);
    Deps d = k == 0 ? deps : Deps{};
    d.push_back(gathers[static_cast<std::size_t>(k)]);
    out = run(ComputeKind::kForward, mb, chunk, piece, d);
    // Piece k + 1 starting (once piece k is done) dispatches gather k + 2.
    if (static_cast<std::int64_t>(gathers.size()) < n && k + 2 < n) {
      gathers.push_back(param_gather(chunk, mb, {out}));
    }
  }
  return out;
}

// BF16 parameters; with --fp8-param-gather the GEMM weights in FP8, 1 byte each. Under LoRA the
// optimizer updates (and gathers) the adapters only.
double RankProgramWriter::param_bytes(std::int64_t chunk) const {
  const StageCost& sc = cost(chunk);
  if (sc.lora) return static_cast<double>(sc.lora_params_per_gpu) * 2.0;
  const double fp8 = plan_.fp8_param_gather ? static_cast<double>(sc.gemm_params_per_gpu) : 0;
  return static_cast<double>(sc.params_per_gpu) * 2.0 - fp8;
}

// ZeRO-3 gathers a chunk's parameters before each of its passes.
void RankProgramWriter::zero3_gather(std::int64_t chunk, std::int64_t mb, Deps& deps) {
  if (plan_.zero < 3 || !shares_trained_params(chunk)) return;
  if (plan_.overlap_param_gather) {
    deps.push_back(dp_collective(Stream::kDP, CollectiveKind::kAllGather, chunk, param_bytes(chunk),
                                 buckets(chunk), mb, {}));
  } else {
    last_compute_ = dp_collective(Stream::kCompute, CollectiveKind::kAllGather, chunk,
                                  param_bytes(chunk), buckets(chunk), mb, take_pending());
  }
}

// Counts weight-gradient completions; true when this one finishes the chunk's gradients, or
// for every micro-batch's where the plan reduces after each (Plan::reduces_every_microbatch).
bool RankProgramWriter::completes_gradients(std::int64_t chunk) {
  const bool last = ++weight_passes_[chunk] == plan_.num_microbatches();
  return last || plan_.reduces_every_microbatch();
}

// The pass that completes a chunk's gradients, cut into its gradient buckets when their
// reduction overlaps the backward.
Index RankProgramWriter::reduce_while_computing(ComputeKind kind, std::int64_t mb,
                                                std::int64_t chunk, const PassCost& pass,
                                                const Deps& deps) {
  if (!plan_.overlap_grad_reduce || !shares_trained_params(chunk)) {
    const Index out = run(kind, mb, chunk, pass, deps);
    reduce_gradients(chunk, out);
    return out;
  }
  const auto n = buckets(chunk);
  const double bytes = cost(chunk).grad_bytes / static_cast<double>(n);
  Deps first = deps;
  for (std::int64_t k = 0; k < n; ++k) {
    const PassCost piece = pass_piece(pass, k, n);
    const Index out = run(kind, mb, chunk, piece, k == 0 ? first : Deps{});
    dp_ops_.push_back(dp_collective(Stream::kDP, reduction(), chunk, bytes, 1, mb, {out}));
    if (k == n - 1) return out;
  }
  return *last_compute_;
}

CollectiveKind RankProgramWriter::reduction() const {
  return plan_.distributed_optimizer() ? CollectiveKind::kReduceScatter
                                       : CollectiveKind::kAllReduce;
}

// After the chunk's last gradient: reduce now on the DP stream (overlap) or at step end; with
// a reduction after every micro-batch and no overlap, after each backward on the compute stream.
void RankProgramWriter::reduce_gradients(std::int64_t chunk, Index after) {
  if (!shares_trained_params(chunk)) return;
  if (plan_.overlap_grad_reduce) {
    dp_ops_.push_back(dp_collective(Stream::kDP, reduction(), chunk, cost(chunk).grad_bytes,
                                    buckets(chunk), -1, {after}));
  } else if (plan_.reduces_every_microbatch()) {
    last_compute_ = dp_collective(Stream::kCompute, reduction(), chunk, cost(chunk).grad_bytes,
                                  buckets(chunk), -1, {after});
  } else {
    deferred_reductions_.push_back(chunk);
  }
}

}  // namespace trainsim::graph_detail
