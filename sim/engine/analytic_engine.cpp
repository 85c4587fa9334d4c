// Critical-path replay without contention. Each (rank, stream) advances op by op; an op starts
// when its stream is free and its dependencies are done (a stream blocked on one waits for that
// op alone, and is woken when it completes). A point-to-point transfer starts when
// both ends have posted it and takes its route's latency plus size over the route's narrowest
// link; a collective starts when its last member arrives and takes the closed-form time of the
// algorithm NCCL would pick (sim/collective/). With a compute slowdown (communication kernels
// taking SMs), a first replay measures each compute op's overlap with its GPU's communication and
// a second replays with each compute op longer by the slowdown times that overlap: the first-order
// effect of what the SimGrid engine shares exactly.
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "sim/core/progress.hpp"
#include "sim/engine/analytic_state.hpp"
#include "sim/engine/collective_replay.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/replay_index.hpp"

namespace trainsim {

namespace {

using analytic::Actor;
using analytic::Channel;
using analytic::Instance;
using analytic::kNotDone;
using analytic::OpState;
using analytic::Posted;

class AnalyticReplay {
 public:
  /// `stretch`: per rank and op, seconds a compute op takes beyond its own (empty: none).
  /// `for_stretch`: a first replay whose only use is overlap_stretch() (communication spans).
  AnalyticReplay(const TaskGraph& g, const Topology& topo, const EngineOptions& options,
                 const ReplayIndex& index, std::vector<std::vector<double>> stretch = {},
                 bool for_stretch = false)
      : g_(g),
        stretch_(std::move(stretch)),
        record_compute_(!for_stretch && !options.step_only),
        record_comm_(for_stretch || !options.step_only),
        topo_(topo),
        options_(options),
        index_(index) {
    result_.engine = EngineKind::kAnalytic;
    done_.resize(g.ranks.size());
    state_.resize(g.ranks.size());
    spans_.resize(g.ranks.size());
    for (std::size_t r = 0; r < g.ranks.size(); ++r) {
      const auto size = g.ranks[r].ops.size();
      done_[r].assign(size, kNotDone);
      state_[r].resize(size);
    }
    actors_.resize(index.streams.size());
    for (std::size_t a = 0; a < actors_.size(); ++a) {
      actors_[a].rank = index.streams[a].rank;
      actors_[a].ops = &index.streams[a].ops;
    }
  }

  void replay() {
    for (std::size_t a = 0; a < actors_.size(); ++a) schedule(a);
    // Streams run last woken first: their ops are still in cache. Times do not depend on the
    // order (messages match in posting order per channel, collectives by call number).
    while (!runnable_.empty()) {
      const auto a = runnable_.back();
      runnable_.pop_back();
      actors_[a].queued = false;
      current_ = a;
      const auto posted = actors_[a].pc;
      advance(a);
      current_ = kNone;
      if (options_.progress != nullptr) {
        options_.progress->done.fetch_add(actors_[a].pc - posted, std::memory_order_relaxed);
      }
    }
  }

  /// After replay(): per rank and op, `slowdown` x the time communication of the same GPU was in
  /// progress during the compute op (what a replay with that stretch gives to first order).
  std::vector<std::vector<double>> overlap_stretch(double slowdown) const {
    std::vector<std::vector<double>> stretch(g_.ranks.size());
    for (std::size_t r = 0; r < g_.ranks.size(); ++r) {
      std::vector<std::pair<double, double>> comm;
      for (const Span& s : spans_[r]) {
        if (!s.compute && s.end > s.start) comm.emplace_back(s.start, s.end);
      }
      std::sort(comm.begin(), comm.end());
      std::vector<std::pair<double, double>> merged;
      for (const auto& c : comm) {
        if (!merged.empty() && c.first <= merged.back().second) {
          merged.back().second = std::max(merged.back().second, c.second);
        } else {
          merged.push_back(c);
        }
      }
      const auto& ops = g_.ranks[r].ops;
      stretch[r].assign(ops.size(), 0.0);
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].type != OpType::kCompute) continue;
        const double end = done_[r][i], start = end - ops[i].seconds;
        auto it = std::lower_bound(merged.begin(), merged.end(), std::pair{start, start});
        if (it != merged.begin()) --it;
        double overlap = 0;
        for (; it != merged.end() && it->first < end; ++it) {
          overlap += std::max(0.0, std::min(end, it->second) - std::max(start, it->first));
        }
        stretch[r][i] = slowdown * overlap;
      }
    }
    return stretch;
  }

  /// After replay(): the steady state's shift over `window`, where periodic.
  std::optional<double> steady(const SteadyWindow& window) const {
    return steady_shift(g_, done_, stretch_, window);
  }

  SimResult run() {
    replay();
    if (options_.steady) result_.steady_shift = steady(*options_.steady);
    result_.ranks.resize(g_.ranks.size());
    if (options_.list_collectives) result_.collectives = collective_stats(g_, topo_, index_.groups);
    for (std::size_t r = 0; r < g_.ranks.size(); ++r) {
      double end = 0;
      for (std::size_t i = 0; i < done_[r].size(); ++i) {
        if (done_[r][i] == kNotDone) {
          throw std::logic_error("analytic replay deadlocked: rank " + std::to_string(r) +
                                 " never finished op " + std::to_string(i));
        }
        end = std::max(end, done_[r][i]);
      }
      result_.step_time_s = std::max(result_.step_time_s, end);
      if (options_.step_only) continue;
      result_.ranks[r] = summarize(spans_[r], end);
      if (options_.keep_timelines) result_.timelines.push_back(std::move(spans_[r]));
    }
    return result_;
  }

 private:
  const Op& op_at(std::int32_t rank, std::uint32_t i) const {
    return g_.ranks[static_cast<std::size_t>(rank)].ops[i];
  }

  std::uint64_t key(std::int64_t src, std::int64_t dst, std::int32_t ch) const {
    return (static_cast<std::uint64_t>(src) * static_cast<std::uint64_t>(g_.ranks.size()) +
            static_cast<std::uint64_t>(dst)) *
               64u +
           static_cast<std::uint64_t>(ch);
  }

  // Queue a stream to go on, once: the stream advancing now needs no queueing (its loop goes on),
  // and a stream must never sit twice on a waiting list.
  void schedule(std::size_t a) {
    if (a == current_ || actors_[a].queued) return;
    actors_[a].queued = true;
    runnable_.push_back(a);
    const Actor& actor = actors_[a];
    if (actor.pc < actor.ops->size())
      __builtin_prefetch(&op_at(actor.rank, (*actor.ops)[actor.pc]));
  }

  static void next_op(Actor& actor) {
    ++actor.pc;
    actor.next_dep = 0;
    actor.deps_end = 0;
  }

  // Streams waiting for this op (a dependency) can go on.
  void wake(std::int32_t rank, std::uint32_t op) {
    auto& head = state_[static_cast<std::size_t>(rank)][op].first_waiter;
    for (auto a = head; a >= 0; a = actors_[static_cast<std::size_t>(a)].next_waiter) {
      schedule(static_cast<std::size_t>(a));
    }
    head = -1;
  }

  // The op finished at `end`: record it and wake the streams waiting for it.
  void complete(std::int32_t rank, std::uint32_t op, double end) {
    done_[static_cast<std::size_t>(rank)][op] = end;
    wake(rank, op);
    // The stream that posted the op, if it was a communication op, goes on.
    const auto a = index_.actor_of[static_cast<std::size_t>(rank)]
                                  [static_cast<std::size_t>(op_at(rank, op).stream)];
    auto& actor = actors_[static_cast<std::size_t>(a)];
    if (actor.waiting && (*actor.ops)[actor.pc] == op) {
      actor.time = end;
      actor.waiting = false;
      next_op(actor);
      schedule(static_cast<std::size_t>(a));
    }
  }

  void transfer(const Posted& send, const Posted& recv) {
    const double start = std::max(send.time, recv.time);
    const auto src = g_.gpu_of(send.rank), dst = g_.gpu_of(recv.rank);
    const double end = start + send_recv_seconds(topo_, src, dst, send.bytes);
    ++result_.activities;
    for (const Posted* p : {&send, &recv}) {
      if (record_comm_) {
        spans_[static_cast<std::size_t>(p->rank)].push_back(
            {start, end, false, ComputeKind::kOther, CommKind::kPP,
             op_at(p->rank, p->op).microbatch, 0, p->transfer, p->op});
      }
      auto& b = state_[static_cast<std::size_t>(p->rank)][p->op];
      b.batch_end = std::max(b.batch_end, end);
      if (--b.pending == 0) complete(p->rank, p->op, b.batch_end);
    }
  }

  void post_p2p(std::int32_t r, std::uint32_t i, double now) {
    const auto& op = op_at(r, i);
    const auto& prog = g_.ranks[static_cast<std::size_t>(r)];
    auto& batch = state_[static_cast<std::size_t>(r)][i];
    batch.pending = op.num_sends + op.num_recvs;
    batch.batch_end = now;
    if (batch.pending == 0) {
      complete(r, i, now);
      return;
    }
    for (std::uint32_t k = 0; k < op.num_sends + op.num_recvs; ++k) {
      const auto& t = prog.transfers[op.first_transfer + k];
      const bool send = k < op.num_sends;
      auto& ch = channels_[send ? key(r, t.peer, t.channel) : key(t.peer, r, t.channel)];
      const Posted me{r, i, now, t.bytes, static_cast<std::int16_t>(k)};
      if (send) {
        if (!ch.recvs.empty()) {
          const Posted rv = ch.recvs.front();
          ch.recvs.pop_front();
          transfer(me, rv);
        } else {
          ch.sends.push_back(me);
        }
      } else if (!ch.sends.empty()) {
        const Posted sd = ch.sends.front();
        ch.sends.pop_front();
        transfer(sd, me);
      } else {
        ch.recvs.push_back(me);
      }
    }
  }

  void arrive(std::int32_t r, std::uint32_t i, double now) {
    const auto& op = op_at(r, i);
    const auto& group = g_.groups[static_cast<std::size_t>(op.group)];
    const auto seconds = [&] {
      return index_.groups[static_cast<std::size_t>(op.group)]
          .choose(op.collective, op.bytes, op.count)
          .seconds;
    };
    if (g_.ranks_of(group).size() == 1) {  // one rank replays it: it starts at once
      ++result_.activities;
      const double end = now + seconds();
      if (end > now && record_comm_) {
        spans_[static_cast<std::size_t>(r)].push_back(
            {now, end, false, ComputeKind::kOther, op.comm, op.microbatch, 0, -1, i});
      }
      complete(r, i, end);
      return;
    }
    const auto call = index_.calls[static_cast<std::size_t>(r)][i];
    auto& inst = instances_[{op.group, call}];
    inst.latest = std::max(inst.latest, now);
    inst.members.emplace_back(r, i);
    if (++inst.arrived < static_cast<std::int64_t>(g_.ranks_of(group).size())) return;
    const double duration = seconds();
    const double start = inst.latest;
    const auto members = std::move(inst.members);
    instances_.erase({op.group, call});
    result_.activities += members.size();
    for (const auto& [mr, mi] : members) {
      if (duration > 0 && record_comm_) {
        spans_[static_cast<std::size_t>(mr)].push_back({start, start + duration, false,
                                                        ComputeKind::kOther, op.comm,
                                                        op_at(mr, mi).microbatch, 0, -1, mi});
      }
      complete(mr, mi, start + duration);
    }
  }

  void advance(std::size_t a) {
    auto& actor = actors_[a];
    while (!actor.waiting && actor.pc < actor.ops->size()) {
      const std::int32_t r = actor.rank;
      const std::uint32_t i = (*actor.ops)[actor.pc];
      const auto& op = op_at(r, i);
      const auto& prog = g_.ranks[static_cast<std::size_t>(r)];
      if (actor.pc + 1 < actor.ops->size())
        __builtin_prefetch(&op_at(r, (*actor.ops)[actor.pc + 1]));
      for (; actor.next_dep < op.num_deps; ++actor.next_dep) {
        const auto dep_op = prog.deps[op.first_dep + actor.next_dep];
        const double dep = done_[static_cast<std::size_t>(r)][dep_op];
        if (dep == kNotDone) {
          auto& head = state_[static_cast<std::size_t>(r)][dep_op].first_waiter;
          actor.next_waiter = head;  // woken when that op is done
          head = static_cast<std::int32_t>(a);
          return;
        }
        actor.deps_end = std::max(actor.deps_end, dep);
      }
      const double start = std::max(actor.time, actor.deps_end);
      if (op.type == OpType::kCompute) {
        const double end = start + op.seconds +
                           (stretch_.empty() ? 0.0 : stretch_[static_cast<std::size_t>(r)][i]);
        if (record_compute_) {
          spans_[static_cast<std::size_t>(r)].push_back(
              {start, end, true, op.compute, op.comm, op.microbatch, op.chunk, -1, i});
        }
        ++result_.activities;
        done_[static_cast<std::size_t>(r)][i] = end;
        actor.time = end;
        next_op(actor);
        wake(r, i);
        continue;
      }
      actor.waiting = true;
      if (op.type == OpType::kP2P) {
        post_p2p(r, i, start);
      } else {
        arrive(r, i, start);
      }
    }
  }

  const TaskGraph& g_;
  std::vector<std::vector<double>> stretch_;
  bool record_compute_;  // spans kept for the statistics
  bool record_comm_;     // and for a first replay's stretch
  const Topology& topo_;
  EngineOptions options_;
  const ReplayIndex& index_;
  std::vector<Actor> actors_;
  std::vector<std::vector<double>> done_;
  std::vector<std::vector<Span>> spans_;
  std::vector<std::vector<OpState>> state_;
  std::map<std::pair<std::int32_t, std::int32_t>, Instance> instances_;
  std::unordered_map<std::uint64_t, Channel> channels_;
  std::deque<std::size_t> runnable_;
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t current_ = kNone;  // the stream advancing now
  SimResult result_;
};

}  // namespace

SimResult simulate_analytic(const TaskGraph& graph, const Topology& topology,
                            const EngineOptions& options) {
  check_task_graph(graph);
  CollectiveShapes own;  // when the caller shares none
  const ReplayIndex index(graph, topology, options.shapes != nullptr ? *options.shapes : own);
  if (options.progress != nullptr) {
    options.progress->total += graph.num_ops() * (options.compute_slowdown > 0 ? 2 : 1);
  }
  if (options.compute_slowdown <= 0) {
    return name_gpus(graph, AnalyticReplay(graph, topology, options, index).run());
  }
  // Compute slowed while communication runs: a first replay finds how long each compute op
  // overlaps communication, the second stretches it by the slowdown times that time.
  AnalyticReplay first(graph, topology, options, index, {}, /*for_stretch=*/true);
  first.replay();
  SimResult second = AnalyticReplay(graph, topology, options, index,
                                    first.overlap_stretch(options.compute_slowdown))
                         .run();
  // The stretches of a longer step's extra periods are the first replay's: it must repeat too.
  if (second.steady_shift && !first.steady(*options.steady)) second.steady_shift.reset();
  return name_gpus(graph, std::move(second));
}

}  // namespace trainsim
