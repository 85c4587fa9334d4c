#pragma once
// How the task-graph builder writes one rank's program (sim/graph/builder.hpp): the schedule's
// passes and pipeline exchanges (builder.cpp) and the data-parallel collectives around them,
// gradient reductions and parameter gathers (data_parallel_ops.cpp). Internal to sim/graph.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "sim/cost/stage_cost.hpp"
#include "sim/graph/builder.hpp"
#include "sim/graph/groups.hpp"
#include "sim/graph/task_graph.hpp"
#include "sim/plan/layout.hpp"
#include "sim/plan/plan.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim::graph_detail {

using Index = std::uint32_t;
// Most ops wait for none to three others: kept inline, no allocation per op.
using Deps = boost::container::small_vector<Index, 4>;

class RankBuilder {
 public:
  explicit RankBuilder(RankProgram& program) : p_(program) {}

  Index add(Op op, const Deps& deps) {
    op.first_dep = static_cast<std::uint32_t>(p_.deps.size());
    op.num_deps = static_cast<std::uint16_t>(deps.size());
    p_.deps.insert(p_.deps.end(), deps.begin(), deps.end());
    p_.ops.push_back(op);
    return static_cast<Index>(p_.ops.size() - 1);
  }

  Index compute(ComputeKind kind, std::int64_t mb, std::int64_t chunk, double seconds,
                const Deps& deps) {
    Op op;
    op.type = OpType::kCompute;
    op.compute = kind;
    op.microbatch = static_cast<std::int32_t>(mb);
    op.chunk = static_cast<std::int16_t>(chunk);
    op.seconds = seconds;
    return add(op, deps);
  }

  // The compute stream held for calls of `kind` beside the kernels before it (ComputeKind::kWait).
  Index wait(CommKind kind, std::int64_t mb, std::int64_t chunk, double seconds) {
    Op op;
    op.type = OpType::kCompute;
    op.compute = ComputeKind::kWait;
    op.comm = kind;
    op.microbatch = static_cast<std::int32_t>(mb);
    op.chunk = static_cast<std::int16_t>(chunk);
    op.seconds = seconds;
    return add(op, {});
  }

  Index collective(Stream stream, CommKind kind, CollectiveKind coll, std::int32_t group,
                   double bytes, std::int64_t count, std::int64_t mb, const Deps& deps) {
    Op op;
    op.type = OpType::kCollective;
    op.stream = stream;
    op.comm = kind;
    op.collective = coll;
    op.group = group;
    op.bytes = bytes;
    op.count = static_cast<std::int32_t>(count);
    op.microbatch = static_cast<std::int32_t>(mb);
    return add(op, deps);
  }

  Index p2p(Stream stream, const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs,
            std::int64_t mb, const Deps& deps) {
    Op op;
    op.type = OpType::kP2P;
    op.stream = stream;
    op.comm = CommKind::kPP;
    op.microbatch = static_cast<std::int32_t>(mb);
    op.first_transfer = static_cast<std::uint32_t>(p_.transfers.size());
    op.num_sends = static_cast<std::uint16_t>(sends.size());
    op.num_recvs = static_cast<std::uint16_t>(recvs.size());
    p_.transfers.insert(p_.transfers.end(), sends.begin(), sends.end());
    p_.transfers.insert(p_.transfers.end(), recvs.begin(), recvs.end());
    return add(op, deps);
  }

 private:
  RankProgram& p_;
};

// One rank's program: the schedule's steps turned into ops on streams.
class RankProgramWriter {
 public:
  RankProgramWriter(const Plan& plan, const CostModel& costs, const Layout& layout,
                    const std::vector<std::int32_t>& rank_of_gpu, std::int64_t gpu,
                    const GroupIds& groups, RankProgram& program)
      : plan_(plan),
        costs_(costs),
        layout_(layout),
        rank_of_gpu_(rank_of_gpu),
        gpu_(gpu),
        stage_(layout.coord(gpu, Dim::kPP)),
        groups_(groups),
        b_(program) {
    if (plan.schedule == ScheduleKind::kInterleaved) {
      const auto group = plan.microbatch_group_size_per_vp_stage;
      table_ =
          interleaved_schedule_table(plan.num_microbatches(), plan.vp, group > 0 ? group : plan.pp);
    }
  }

  void write(const std::vector<ScheduleStep>& steps) {
    for (const auto& step : steps) {
      if (step.kind == ScheduleStep::Kind::kComm) {
        exchange(step);
      } else {
        pass(step);
      }
    }
    finish_step();
  }

 private:
  std::int64_t vstage(std::int64_t chunk) const { return chunk * plan_.pp + stage_; }
  const StageCost& cost(std::int64_t chunk) const {
    return costs_.stages[static_cast<std::size_t>(vstage(chunk))];
  }
  // Megatron-Core buckets gradients only when their reduction overlaps the backward; otherwise
  // the whole buffer is one bucket, reduced by one collective.
  std::int64_t buckets(std::int64_t chunk) const {
    if (!plan_.overlap_grad_reduce) return 1;
    const auto per_bucket = grad_bucket_params(plan_.data_shards());
    const std::int64_t params = cost(chunk).trained_params_per_gpu();
    return std::max<std::int64_t>(1, (params + per_bucket - 1) / per_bucket);
  }
  static std::int64_t key(Flow flow, std::int64_t mb, std::int64_t chunk) {
    return (mb * 1024 + chunk) * 2 + (flow == Flow::kActivation ? 0 : 1);
  }

  // Deps for the next compute-stream op: what it must wait for besides program order.
  Deps take_pending() {
    Deps d = std::move(pending_);
    pending_.clear();
    return d;
  }

  // The schedule's passes and pipeline exchanges (builder.cpp).
  Index compute_op(ComputeKind kind, std::int64_t mb, std::int64_t chunk, double seconds,
                   Deps deps = {});
  Index run(ComputeKind kind, std::int64_t mb, std::int64_t chunk, const PassCost& pass,
            Deps deps = {});
  void wait_for_calls_beside(const PassCost& pass, double times, std::int64_t mb,
                             std::int64_t chunk);
  Deps output_of(Index tail) const;
  static PassCost pass_piece(const PassCost& pass, std::int64_t k, std::int64_t n);
  void pass(const ScheduleStep& step);
  void exchange(const ScheduleStep& step);
  bool defers_lm_head_wgrad(std::int64_t chunk);
  std::vector<Transfer> transfers(const std::vector<Exchange>& ex, bool sending) const;
  void flush_lm_head_wgrads();
  void all_reduce_after_dp(Dim dim, double StageCost::*bytes);
  void finish_step();

  std::int32_t dp_group() const { return groups_[index_of(Dim::kDP)]; }
  std::int32_t edp_group() const { return groups_[index_of(Dim::kEDP)]; }
  // Whether the rank's parameters are shared with others: by data parallelism, or its experts'
  // by expert data parallelism.
  bool shares_params() const { return dp_group() >= 0 || edp_group() >= 0; }
  // Whether a chunk has gradients to reduce and parameters to gather: shared, and trained (under
  // LoRA a chunk without decoder layers trains nothing, and issues no zero-byte calls).
  bool shares_trained_params(std::int64_t chunk) const {
    return shares_params() && cost(chunk).grad_bytes > 0;
  }

  // Gradient reductions and parameter gathers (data_parallel_ops.cpp).
  struct DpGroups {
    Dim dense;
    Dim experts;
    double dense_shards = 1;   // what divides the dense part's bytes
    double expert_shards = 1;  // and the experts'
  };
  std::optional<Index> dense_and_expert(Stream stream, CollectiveKind kind, DpGroups groups,
                                        std::int64_t chunk, double bytes, std::int64_t count,
                                        std::int64_t mb, const Deps& deps);
  Index dp_collective(Stream stream, CollectiveKind kind, std::int64_t chunk, double bytes,
                      std::int64_t count, std::int64_t mb, const Deps& deps);
  bool gathers_during_forward(std::int64_t chunk) const;
  Index param_gather(std::int64_t chunk, std::int64_t mb, Deps after);
  void dispatch_param_gathers(std::int64_t chunk, const Deps& after);
  void align_param_gathers(std::int64_t vmb);
  Index forward_with_param_gather(std::int64_t mb, std::int64_t chunk, const PassCost& pass,
                                  const Deps& deps);
  double param_bytes(std::int64_t chunk) const;
  void zero3_gather(std::int64_t chunk, std::int64_t mb, Deps& deps);
  bool completes_gradients(std::int64_t chunk);
  Index reduce_while_computing(ComputeKind kind, std::int64_t mb, std::int64_t chunk,
                               const PassCost& pass, const Deps& deps);
  CollectiveKind reduction() const;
  void reduce_gradients(std::int64_t chunk, Index after);

 private:
  const Plan& plan_;
  const CostModel& costs_;
  const Layout& layout_;
  const std::vector<std::int32_t>& rank_of_gpu_;  // empty: rank = GPU (a full graph)
  std::int64_t gpu_;
  std::int64_t stage_;
  GroupIds groups_;  // by dimension; -1 where the dimension has size 1
  RankBuilder b_;
  std::optional<Index> last_compute_;
  Deps pending_;
  std::unordered_map<std::int64_t, Deps> produced_;  // what each output waits for
  Deps ran_alongside_;  // the calls the last run() issued beside its compute
  std::unordered_map<std::int64_t, Index> received_;
  std::set<std::int64_t> gathered_;
  std::set<std::int64_t> weights_cast_;  // chunks whose FP8 weights this step has quantised
  std::map<std::int64_t, std::vector<Index>> dispatched_;
  std::int64_t forwards_ = 0;      // forwards written so far: the next one's virtual micro-batch
  std::vector<TableEntry> table_;  // the interleaved schedule's table
  std::map<std::int64_t, std::int64_t> weight_passes_;
  Deps dp_ops_;
  Deps sends_;
  std::vector<std::int64_t> deferred_reductions_;
  std::int64_t lm_head_wgrads_deferred_ = 0;  // backwards that left theirs to the flush
};

}  // namespace trainsim::graph_detail
