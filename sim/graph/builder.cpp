#include "sim/graph/builder.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <boost/container/small_vector.hpp>

#include "sim/graph/groups.hpp"
#include "sim/plan/layout.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {

std::int64_t grad_bucket_params(std::int64_t dp) {
  return std::max<std::int64_t>(40'000'000, 1'000'000 * dp);
}

namespace {

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
    return std::max<std::int64_t>(1, (cost(chunk).params_per_gpu + per_bucket - 1) / per_bucket);
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

  Index compute_op(ComputeKind kind, std::int64_t mb, std::int64_t chunk, double seconds,
                   Deps deps = {}) {
    Deps all = take_pending();
    all.insert(all.end(), deps.begin(), deps.end());
    last_compute_ = b_.compute(kind, mb, chunk, seconds, all);
    return *last_compute_;
  }

  std::int32_t dp_group() const { return groups_[index_of(Dim::kDP)]; }
  std::int32_t edp_group() const { return groups_[index_of(Dim::kEDP)]; }
  // Whether the rank's parameters are shared with others: by data parallelism, or its experts'
  // by expert data parallelism.
  bool shares_params() const { return dp_group() >= 0 || edp_group() >= 0; }

  // A data-parallel collective on a chunk's parameters or gradients, `bytes` in all: the dense
  // part on the DP group and, with expert parallelism, the experts' part on the expert-data-
  // parallel group (Megatron-Core's expert_data_parallel_group). Returns the last op issued.
  Index dp_collective(Stream stream, CollectiveKind kind, std::int64_t chunk, double bytes,
                      std::int64_t count, std::int64_t mb, const Deps& deps) {
    const StageCost& sc = cost(chunk);
    const double expert = sc.params_per_gpu > 0 ? static_cast<double>(sc.expert_params_per_gpu) /
                                                      static_cast<double>(sc.params_per_gpu)
                                                : 0.0;
    std::optional<Index> last;
    if (dp_group() >= 0 && (expert < 1.0 || edp_group() < 0)) {
      last = b_.collective(stream, CommKind::kDP, kind, dp_group(), bytes * (1.0 - expert), count,
                           mb, deps);
    }
    if (edp_group() >= 0 && (expert > 0.0 || !last)) {
      last =
          b_.collective(stream, CommKind::kDP, kind, edp_group(), bytes * expert, count, mb, deps);
    }
    assert(last);
    return *last;
  }

  // A pass: its compute op, then its collectives after it on the compute stream or, for calls
  // marked alongside (sim/cost/layer_ops.hpp), beside it on their dimension's stream, TP, CP or EP
  // (same start; the next compute op waits for both). Returns the op after which the pass's
  // output exists.
  Index run(ComputeKind kind, std::int64_t mb, std::int64_t chunk, const PassCost& pass,
            Deps deps = {}) {
    Deps all = take_pending();
    all.insert(all.end(), deps.begin(), deps.end());
    Deps alongside = all;
    if (last_compute_) alongside.push_back(*last_compute_);
    const Index c = b_.compute(kind, mb, chunk, pass.seconds, all);
    last_compute_ = c;
    Index out = c;
    for (const CollectiveLoad& load : pass.collectives) {
      const auto group = groups_[index_of(load.dim)];
      if (group < 0 || load.count == 0) continue;
      if (load.alongside) {
        const Stream side = load.dim == Dim::kCP   ? Stream::kCP
                            : load.dim == Dim::kEP ? Stream::kEP
                                                   : Stream::kTP;
        out = b_.collective(side, comm_kind(load.dim), load.kind, group, load.bytes, load.count, mb,
                            alongside);
        pending_.push_back(out);
        continue;
      }
      last_compute_ = b_.collective(Stream::kCompute, comm_kind(load.dim), load.kind, group,
                                    load.bytes, load.count, mb, {});
      out = *last_compute_;
    }
    return out;
  }

  // --overlap-param-gather: the distributed optimizer's parameter all-gathers run during the
  // first forward of each chunk, bucket by bucket, the forward of bucket k's layers waiting for
  // its gather. Without interleaving Megatron-Core's forward pre-hooks issue them: starting
  // bucket k dispatches the gather of bucket k + 1 (the DP stream runs them in order). With
  // interleaving Megatron-LM aligns them (--align-param-gather, its default): all of chunk 0's
  // gathers at the start of the step, and all of chunk c + 1's when the forward of virtual
  // micro-batch k runs with k + stage the first micro-batch of chunk c.
  bool gathers_during_forward(std::int64_t chunk) const {
    return shares_params() && plan_.overlap_param_gather && plan_.zero < 3 &&
           !gathered_.contains(chunk);
  }

  Index param_gather(std::int64_t chunk, std::int64_t mb, Deps after) {
    const double bytes = param_bytes(chunk) / static_cast<double>(buckets(chunk));
    return dp_collective(Stream::kDP, CollectiveKind::kAllGather, chunk, bytes, 1, mb, after);
  }

  // Interleaved: dispatch all of a chunk's bucket gathers, after `after` (the dispatch point).
  void dispatch_param_gathers(std::int64_t chunk, const Deps& after) {
    if (chunk >= plan_.vp || !gathers_during_forward(chunk) || dispatched_.contains(chunk)) return;
    auto& list = dispatched_[chunk];
    for (std::int64_t k = 0; k < buckets(chunk); ++k)
      list.push_back(param_gather(chunk, -1, after));
  }

  // Called before writing each forward (virtual micro-batch `vmb` of this stage).
  void align_param_gathers(std::int64_t vmb) {
    if (plan_.schedule != ScheduleKind::kInterleaved || !plan_.overlap_param_gather) return;
    const std::int64_t total = static_cast<std::int64_t>(table_.size());
    if (vmb == 0) dispatch_param_gathers(0, {});
    const std::int64_t ahead = vmb + stage_;
    if (ahead >= total || table_[static_cast<std::size_t>(ahead)].microbatch != 0) return;
    Deps after;
    if (last_compute_) after.push_back(*last_compute_);
    dispatch_param_gathers(table_[static_cast<std::size_t>(ahead)].chunk + 1, after);
  }

  Index forward_with_param_gather(std::int64_t mb, std::int64_t chunk, const PassCost& pass,
                                  const Deps& deps) {
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

  // Piece k of n of a pass split by parameter buckets: its share of the compute and of the
  // collectives' calls (each call keeps its size), so that TP communication overlaps the piece
  // that issues it.
  static PassCost pass_piece(const PassCost& pass, std::int64_t k, std::int64_t n) {
    PassCost piece;
    piece.seconds = pass.seconds / static_cast<double>(n);
    for (const CollectiveLoad& load : pass.collectives) {
      const std::int64_t calls = load.count * (k + 1) / n - load.count * k / n;
      if (calls == 0) continue;
      CollectiveLoad share = load;
      share.count = calls;
      share.bytes = load.bytes * static_cast<double>(calls) / static_cast<double>(load.count);
      piece.collectives.push_back(share);
    }
    return piece;
  }

  // BF16 parameters; with --fp8-param-gather the GEMM weights in FP8, 1 byte each.
  double param_bytes(std::int64_t chunk) const {
    const StageCost& sc = cost(chunk);
    const double fp8 = plan_.fp8_param_gather ? static_cast<double>(sc.gemm_params_per_gpu) : 0;
    return static_cast<double>(sc.params_per_gpu) * 2.0 - fp8;
  }

  void pass(const ScheduleStep& step) {
    const auto mb = step.microbatch;
    const auto c = step.chunk;
    const StageCost& sc = cost(c);
    Deps deps;
    if (step.pass == Pass::kForward) {
      if (auto it = received_.find(key(Flow::kActivation, mb, c)); it != received_.end()) {
        deps.push_back(it->second);
      }
      zero3_gather(c, mb, deps);
      align_param_gathers(forwards_++);
      produced_[key(Flow::kActivation, mb, c)] =
          gathers_during_forward(c) ? forward_with_param_gather(mb, c, sc.forward, deps)
                                    : run(ComputeKind::kForward, mb, c, sc.forward, deps);
      return;
    }
    if (step.pass == Pass::kBackwardWeight) {
      const Index out = run(ComputeKind::kBackwardWeight, mb, c, sc.backward_weight);
      if (completes_gradients(c)) reduce_gradients(c, out);
      return;
    }
    if (auto it = received_.find(key(Flow::kGradient, mb, c)); it != received_.end()) {
      deps.push_back(it->second);
    }
    zero3_gather(c, mb, deps);
    if (sc.recompute.seconds > 0 || !sc.recompute.collectives.empty()) {
      run(ComputeKind::kRecompute, mb, c, sc.recompute, deps);
      deps.clear();
    }
    const bool whole = step.pass == Pass::kBackward;
    const PassCost& cost_of_pass = whole ? sc.backward : sc.backward_input;
    const auto kind = whole ? ComputeKind::kBackward : ComputeKind::kBackwardInput;
    if (whole && completes_gradients(c)) {
      produced_[key(Flow::kGradient, mb, c)] =
          reduce_while_computing(kind, mb, c, cost_of_pass, deps);
      return;
    }
    produced_[key(Flow::kGradient, mb, c)] = run(kind, mb, c, cost_of_pass, deps);
  }

  // ZeRO-3 gathers a chunk's parameters before each of its passes.
  void zero3_gather(std::int64_t chunk, std::int64_t mb, Deps& deps) {
    if (plan_.zero < 3 || !shares_params()) return;
    if (plan_.overlap_param_gather) {
      deps.push_back(dp_collective(Stream::kDP, CollectiveKind::kAllGather, chunk,
                                   param_bytes(chunk), buckets(chunk), mb, {}));
    } else {
      last_compute_ = dp_collective(Stream::kCompute, CollectiveKind::kAllGather, chunk,
                                    param_bytes(chunk), buckets(chunk), mb, take_pending());
    }
  }

  // Counts weight-gradient completions; true when this one finishes the chunk's gradients.
  bool completes_gradients(std::int64_t chunk) {
    return ++weight_passes_[chunk] == plan_.num_microbatches();
  }

  // The pass that completes a chunk's gradients, cut into its gradient buckets when their
  // reduction overlaps the backward.
  Index reduce_while_computing(ComputeKind kind, std::int64_t mb, std::int64_t chunk,
                               const PassCost& pass, const Deps& deps) {
    if (!plan_.overlap_grad_reduce || !shares_params()) {
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

  CollectiveKind reduction() const {
    return plan_.distributed_optimizer() ? CollectiveKind::kReduceScatter
                                         : CollectiveKind::kAllReduce;
  }

  // After the chunk's last gradient: reduce now on the DP stream (overlap) or at step end.
  void reduce_gradients(std::int64_t chunk, Index after) {
    if (!shares_params()) return;
    if (plan_.overlap_grad_reduce) {
      dp_ops_.push_back(dp_collective(Stream::kDP, reduction(), chunk, cost(chunk).grad_bytes,
                                      buckets(chunk), -1, {after}));
    } else {
      deferred_reductions_.push_back(chunk);
    }
  }

  void exchange(const ScheduleStep& step) {
    if (!plan_.p2p_overlap()) {
      const std::int64_t mb =
          !step.sends.empty() ? step.sends[0].microbatch : step.recvs[0].microbatch;
      last_compute_ = b_.p2p(Stream::kCompute, transfers(step.sends, true),
                             transfers(step.recvs, false), mb, take_pending());
      return;
    }
    // One FIFO stream per direction: a send waits for its tensor, a receive is posted at once
    // and the pass that consumes it waits for it.
    for (const auto& e : step.sends) {
      Deps deps;
      if (auto it = produced_.find(key(e.flow, e.microbatch, e.chunk)); it != produced_.end()) {
        deps.push_back(it->second);
      }
      sends_.push_back(
          b_.p2p(e.flow == Flow::kActivation ? Stream::kSendActivation : Stream::kSendGradient,
                 transfers({e}, true), {}, e.microbatch, deps));
    }
    for (const auto& e : step.recvs) {
      received_[key(e.flow, e.microbatch, e.chunk)] =
          b_.p2p(e.flow == Flow::kActivation ? Stream::kRecvActivation : Stream::kRecvGradient, {},
                 transfers({e}, false), e.microbatch, {});
    }
  }

  // A message crossing the boundary between virtual stages k and k + 1 is stage k's output (or
  // its gradient), whichever way it travels; with interleaving the last physical stage's next
  // stage is the first one.
  std::vector<Transfer> transfers(const std::vector<Exchange>& ex, bool sending) const {
    std::vector<Transfer> out;
    for (const auto& e : ex) {
      const bool towards_next = (e.flow == Flow::kActivation) == sending;
      const std::int64_t k = vstage(e.chunk);
      const std::int64_t boundary = towards_next ? k : k - 1;
      const auto peer = layout_.neighbour(gpu_, Dim::kPP, towards_next ? 1 : -1);
      out.push_back(
          {rank_of_gpu_.empty() ? as_i32(peer) : rank_of_gpu_[static_cast<std::size_t>(peer)],
           e.flow == Flow::kActivation ? 0 : 1,
           costs_.stages[static_cast<std::size_t>(boundary)].p2p_bytes});
    }
    return out;
  }

  void finish_step() {
    for (auto chunk : deferred_reductions_) {
      last_compute_ = dp_collective(Stream::kCompute, reduction(), chunk, cost(chunk).grad_bytes,
                                    buckets(chunk), -1, take_pending());
    }
    Deps deps = dp_ops_;
    deps.insert(deps.end(), sends_.begin(), sends_.end());
    double seconds = 0;
    for (std::int64_t c = 0; c < plan_.vp; ++c) seconds += cost(c).optimizer.seconds;
    compute_op(ComputeKind::kOptimizer, -1, 0, seconds, deps);
    if (plan_.distributed_optimizer() && shares_params() && !plan_.overlap_param_gather &&
        plan_.zero < 3) {
      for (std::int64_t c = 0; c < plan_.vp; ++c) {
        dp_collective(Stream::kCompute, CollectiveKind::kAllGather, c, param_bytes(c), buckets(c),
                      -1, {});
      }
    }
  }

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
  std::unordered_map<std::int64_t, Index> produced_;
  std::unordered_map<std::int64_t, Index> received_;
  std::set<std::int64_t> gathered_;
  std::map<std::int64_t, std::vector<Index>> dispatched_;
  std::int64_t forwards_ = 0;      // forwards written so far: the next one's virtual micro-batch
  std::vector<TableEntry> table_;  // the interleaved schedule's table
  std::map<std::int64_t, std::int64_t> weight_passes_;
  Deps dp_ops_;
  Deps sends_;
  std::vector<std::int64_t> deferred_reductions_;
};

}  // namespace

TaskGraph build_task_graph(const Plan& plan, const CostModel& costs, Replay replay,
                           const ChainClasses& chains) {
  const Layout layout(plan);
  const std::int64_t world = layout.world_size();
  const bool symmetric = replay == Replay::kSymmetric;
  const std::int64_t classes = symmetric ? chains.count() : 1;
  assert(static_cast<std::int64_t>(costs.stages.size()) == plan.pp * plan.vp);

  TaskGraph g;
  const std::int64_t ranks = symmetric ? plan.pp * classes : world;
  g.ranks.resize(static_cast<std::size_t>(ranks));
  if (symmetric) {
    g.gpus = world;
    g.replayed_by.resize(static_cast<std::size_t>(world));
    for (std::int64_t gpu = 0; gpu < world; ++gpu) {
      const std::int64_t s = layout.coord(gpu, Dim::kPP);
      g.replayed_by[static_cast<std::size_t>(gpu)] =
          as_i32(s * classes + chains.class_of(gpu - layout.stage_leader(s)));
    }
  }
  const std::vector<GroupIds> group_ids =
      add_groups(layout, costs, symmetric ? &chains : nullptr, g);

  const ScheduleConfig config = schedule_config(plan);
  std::vector<std::vector<ScheduleStep>> programs;
  for (std::int64_t s = 0; s < plan.pp; ++s) programs.push_back(stage_program(config, s));

  for (std::int64_t rank = 0; rank < ranks; ++rank) {
    const std::int64_t gpu =
        symmetric ? layout.stage_leader(rank / classes) + chains.rep_offset(rank % classes) : rank;
    const std::int64_t stage = layout.coord(gpu, Dim::kPP);
    RankProgram& prog = g.ranks[static_cast<std::size_t>(rank)];
    prog.stage = as_i32(stage);
    if (symmetric) prog.gpu = as_i32(gpu);
    RankProgramWriter writer(plan, costs, layout, g.replayed_by, gpu,
                             group_ids[static_cast<std::size_t>(rank)], prog);
    writer.write(programs[static_cast<std::size_t>(stage)]);
  }
  return g;
}

}  // namespace trainsim
