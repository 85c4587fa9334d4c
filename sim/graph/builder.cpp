#include "sim/graph/builder.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <utility>
#include <vector>

#include "sim/graph/groups.hpp"
#include "sim/graph/rank_program_writer.hpp"
#include "sim/plan/layout.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {

std::int64_t grad_bucket_params(std::int64_t dp) {
  return std::max<std::int64_t>(40'000'000, 1'000'000 * dp);
}

namespace graph_detail {

Index RankProgramWriter::compute_op(ComputeKind kind, std::int64_t mb, std::int64_t chunk,
                                    double seconds, Deps deps) {
  Deps all = take_pending();
  all.insert(all.end(), deps.begin(), deps.end());
  last_compute_ = b_.compute(kind, mb, chunk, seconds, all);
  return *last_compute_;
}

// A pass: its compute op, then its collectives after it on the compute stream or, for calls
// marked alongside (sim/cost/layer_ops.hpp), beside it on their dimension's stream, TP, CP or EP
// (same start; the next compute op waits for both). Returns the last op of the compute stream
// (the compute op or a collective after it); the alongside calls it issued are in
// ran_alongside_. The pass's output exists once both are done (output_of).
Index RankProgramWriter::run(ComputeKind kind, std::int64_t mb, std::int64_t chunk,
                             const PassCost& pass, Deps deps) {
  Deps all = take_pending();
  all.insert(all.end(), deps.begin(), deps.end());
  Deps alongside = all;
  if (last_compute_) alongside.push_back(*last_compute_);
  last_compute_ = b_.compute(kind, mb, chunk, pass.seconds - pass.overlap_stall(), all);
  wait_for_calls_beside(pass, 1.0, mb, chunk);
  ran_alongside_.clear();
  for (const CollectiveLoad& load : pass.collectives) {
    const auto group = groups_[index_of(load.dim)];
    if (group < 0 || load.count == 0) continue;
    if (load.alongside) {
      const Stream side = comm_kind(load.dim) == CommKind::kCP ? Stream::kCP
                          : load.dim == Dim::kEP               ? Stream::kEP
                                                               : Stream::kTP;
      const Index call = b_.collective(side, comm_kind(load.dim), load.kind, group, load.bytes,
                                       load.count, mb, alongside);
      pending_.push_back(call);
      ran_alongside_.push_back(call);
      continue;
    }
    last_compute_ = b_.collective(Stream::kCompute, comm_kind(load.dim), load.kind, group,
                                  load.bytes, load.count, mb, {});
  }
  return *last_compute_;
}

// The compute stream's wait, after a pass's kernels, for the calls beside them that outlast them
// (`times` the pass's stalls): one wait op per kind of traffic, so that the replay counts that
// time as exposed communication of its kind rather than as compute.
void RankProgramWriter::wait_for_calls_beside(const PassCost& pass, double times, std::int64_t mb,
                                              std::int64_t chunk) {
  std::array<double, kNumCommKinds> by_kind{};
  for (std::size_t d = 0; d < kNumDims; ++d) {
    by_kind[static_cast<std::size_t>(comm_kind(static_cast<Dim>(d)))] += pass.stall_s[d];
  }
  for (std::size_t k = 0; k < kNumCommKinds; ++k) {
    if (by_kind[k] * times > 0) {
      last_compute_ = b_.wait(static_cast<CommKind>(k), mb, chunk, by_kind[k] * times);
    }
  }
}

// What a pass's output waits for: `tail`, the last op of its compute stream, and the calls the
// pass (its last piece, when cut into buckets) ran alongside. The calls beside a pass are its
// layers' collectives lumped into one op from the pass's start, so they end before the pass's
// output (the gradient of its first layer, the last one the backward computes) exists;
// the compute op decides when it does.
Deps RankProgramWriter::output_of(Index tail) const {
  Deps out = ran_alongside_;
  out.push_back(tail);
  return out;
}

// Piece k of n of a pass split by parameter buckets: its share of the compute and of the
// collectives' calls (each call keeps its size), so that TP communication overlaps the piece
// that issues it.
PassCost RankProgramWriter::pass_piece(const PassCost& pass, std::int64_t k, std::int64_t n) {
  PassCost piece;
  piece.seconds = pass.seconds / static_cast<double>(n);
  for (std::size_t d = 0; d < kNumDims; ++d) {
    piece.stall_s[d] = pass.stall_s[d] / static_cast<double>(n);
  }
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

void RankProgramWriter::pass(const ScheduleStep& step) {
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
    // The chunk's first forward of the step quantises its FP8 weights for the others.
    const bool casts = !sc.first_forward.kernels.empty() && weights_cast_.insert(c).second;
    const PassCost& forward = casts ? sc.first_forward : sc.forward;
    produced_[key(Flow::kActivation, mb, c)] =
        output_of(gathers_during_forward(c) ? forward_with_param_gather(mb, c, forward, deps)
                                            : run(ComputeKind::kForward, mb, c, forward, deps));
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
  const PassCost& cost_of_pass = !whole                    ? sc.backward_input
                                 : defers_lm_head_wgrad(c) ? sc.backward_deferring_lm_head_wgrad
                                                           : sc.backward;
  const auto kind = whole ? ComputeKind::kBackward : ComputeKind::kBackwardInput;
  if (whole && completes_gradients(c)) {
    produced_[key(Flow::kGradient, mb, c)] =
        output_of(reduce_while_computing(kind, mb, c, cost_of_pass, deps));
    return;
  }
  produced_[key(Flow::kGradient, mb, c)] = output_of(run(kind, mb, c, cost_of_pass, deps));
}

void RankProgramWriter::exchange(const ScheduleStep& step) {
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
      deps = it->second;
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
std::vector<Transfer> RankProgramWriter::transfers(const std::vector<Exchange>& ex,
                                                   bool sending) const {
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

// Whether this backward of the chunk leaves its LM-head weight gradient to the flush
// (--defer-embedding-wgrad-compute; Megatron-LM defers the first micro-batches'), counting it.
bool RankProgramWriter::defers_lm_head_wgrad(std::int64_t chunk) {
  if (cost(chunk).lm_head_wgrad.seconds <= 0) return false;
  if (lm_head_wgrads_deferred_ >= plan_.deferred_lm_head_wgrads()) return false;
  ++lm_head_wgrads_deferred_;
  return true;
}

// The deferred LM-head weight gradients, one GEMM a micro-batch, after the last backward and
// before the gradients are finalised (Megatron-LM's finish_embedding_wgrad_compute). With
// sequence parallelism each GEMM's input is all-gathered beside the GEMM before it, the first
// before them all: that gather on the compute stream, the other n - 1 beside the GEMMs on their
// stream, and each later GEMM's wait for its own (the flush pass's stall, n - 1 times).
void RankProgramWriter::flush_lm_head_wgrads() {
  const std::int64_t n = lm_head_wgrads_deferred_;
  for (std::int64_t c = 0; c < plan_.vp && n > 0; ++c) {
    const PassCost& wgrad = cost(c).lm_head_wgrad;
    if (wgrad.seconds <= 0) continue;
    std::vector<std::pair<CollectiveLoad, std::int32_t>> gathers;
    for (const CollectiveLoad& load : wgrad.collectives) {
      const auto group = groups_[index_of(load.dim)];
      if (group < 0 || load.count == 0) continue;
      gathers.emplace_back(load, group);
      last_compute_ = b_.collective(Stream::kCompute, comm_kind(load.dim), load.kind, group,
                                    load.bytes, load.count, -1, take_pending());
    }
    const Deps start = take_pending();
    Deps beside = start;
    if (last_compute_) beside.push_back(*last_compute_);
    compute_op(ComputeKind::kBackwardWeight, -1, c,
               static_cast<double>(n) * (wgrad.seconds - wgrad.overlap_stall()), start);
    wait_for_calls_beside(wgrad, static_cast<double>(n - 1), -1, c);
    for (const auto& [load, group] : gathers) {
      if (n < 2) break;
      pending_.push_back(b_.collective(Stream::kTP, comm_kind(load.dim), load.kind, group,
                                       load.bytes * static_cast<double>(n - 1),
                                       load.count * (n - 1), -1, beside));
    }
  }
}

// One of Megatron-Core's finalize_model_grads all-reduces, once the data-parallel reductions are
// done: every model chunk's `bytes` in one call over the rank's `dim` group, on the compute
// stream (none where the rank has no such group or nothing to reduce).
void RankProgramWriter::all_reduce_after_dp(Dim dim, double StageCost::*bytes) {
  const std::int32_t group = groups_[index_of(dim)];
  double total = 0;
  for (std::int64_t c = 0; c < plan_.vp; ++c) total += cost(c).*bytes;
  if (group < 0 || total <= 0) return;
  Deps deps = take_pending();
  deps.insert(deps.end(), dp_ops_.begin(), dp_ops_.end());
  last_compute_ = b_.collective(Stream::kCompute, comm_kind(dim), CollectiveKind::kAllReduce, group,
                                total, 1, -1, deps);
}

void RankProgramWriter::finish_step() {
  flush_lm_head_wgrads();
  for (auto chunk : deferred_reductions_) {
    last_compute_ = dp_collective(Stream::kCompute, reduction(), chunk, cost(chunk).grad_bytes,
                                  buckets(chunk), -1, take_pending());
  }
  // Each TP group all-reduces the gradients its ranks computed apart of the parameters they all
  // hold (the norms, biases and router under sequence parallelism, the q/k norms); then the
  // stages holding the word embedding and a copy of it (a tied LM head, a multi-token-prediction
  // module's table) all-reduce its gradient over the embedding group; then, where the routers keep
  // an expert bias, every rank of a stage all-reduces their tokens-per-expert counts.
  all_reduce_after_dp(Dim::kTP, &StageCost::tp_sync_bytes);
  all_reduce_after_dp(Dim::kEmbedding, &StageCost::embedding_sync_bytes);
  all_reduce_after_dp(Dim::kStage, &StageCost::expert_bias_sync_bytes);
  Deps deps = dp_ops_;
  deps.insert(deps.end(), sends_.begin(), sends_.end());
  double seconds = 0;
  for (std::int64_t c = 0; c < plan_.vp; ++c) seconds += cost(c).optimizer.seconds;
  compute_op(ComputeKind::kOptimizer, -1, 0, seconds, deps);
  if (plan_.distributed_optimizer() && shares_params() && !plan_.overlap_param_gather &&
      plan_.zero < 3) {
    for (std::int64_t c = 0; c < plan_.vp; ++c) {
      if (!shares_trained_params(c)) continue;
      dp_collective(Stream::kCompute, CollectiveKind::kAllGather, c, param_bytes(c), buckets(c), -1,
                    {});
    }
  }
}
}  // namespace graph_detail

using graph_detail::RankProgramWriter;

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
