// Critical-path replay without contention: ranks advance op by op; a point-to-point transfer
// starts when both ends have posted it and takes its route's latency plus size over the route's
// narrowest link; a collective starts when its last member arrives.
#include <deque>
#include <stdexcept>
#include <unordered_map>

#include "sim/engine/collective.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/interval_union.hpp"

namespace trainsim {

namespace {

struct Posted {
  std::int32_t rank;
  double time;
  double bytes;
};

struct Channel {
  std::deque<Posted> sends;
  std::deque<Posted> recvs;
};

struct RankState {
  std::size_t pc = 0;
  double time = 0;
  bool done = false;
  // The point-to-point batch the rank is blocked on.
  std::int64_t pending = 0;
  double batch_end = 0;
  std::vector<std::pair<double, double>> intervals;
};

struct GroupState {
  std::int64_t arrived = 0;
  double latest = 0;
};

class AnalyticReplay {
 public:
  AnalyticReplay(const TaskGraph& g, const Topology& topo)
      : g_(g), topo_(topo), state_(g.ranks.size()), groups_(g.groups.size()) {
    result_.engine = EngineKind::kAnalytic;
    result_.ranks.resize(g.ranks.size());
  }

  SimResult run() {
    for (std::int32_t r = 0; r < static_cast<std::int32_t>(g_.ranks.size()); ++r)
      runnable_.push_back(r);
    while (!runnable_.empty()) {
      auto r = runnable_.front();
      runnable_.pop_front();
      advance(r);
    }
    for (std::size_t r = 0; r < state_.size(); ++r) {
      if (!state_[r].done) {
        throw std::logic_error("analytic replay deadlocked: rank " + std::to_string(r) +
                               " is blocked at op " + std::to_string(state_[r].pc));
      }
      result_.ranks[r].end_s = state_[r].time;
      result_.step_time_s = std::max(result_.step_time_s, state_[r].time);
    }
    return result_;
  }

 private:
  std::uint64_t key(std::int64_t src, std::int64_t dst, std::int32_t ch) const {
    return (static_cast<std::uint64_t>(src) * static_cast<std::uint64_t>(g_.ranks.size()) +
            static_cast<std::uint64_t>(dst)) *
               64u +
           static_cast<std::uint64_t>(ch);
  }

  // A matched transfer: both ends account for it; a batch it completes resumes its rank.
  void transfer(const Posted& send, std::int32_t dst, double recv_time) {
    const double start = std::max(send.time, recv_time);
    const double end = start + topo_.route_latency(send.rank, dst) +
                       whole_bytes(send.bytes) / topo_.route_bandwidth(send.rank, dst);
    ++result_.activities;
    for (auto r : {send.rank, dst}) {
      auto& st = state_[static_cast<std::size_t>(r)];
      st.intervals.emplace_back(start, end);
      st.batch_end = std::max(st.batch_end, end);
      if (--st.pending == 0) finish_batch(r);
    }
  }

  void finish_batch(std::int32_t r) {
    auto& st = state_[static_cast<std::size_t>(r)];
    result_.ranks[static_cast<std::size_t>(r)].comm_s[static_cast<std::size_t>(CommKind::kPP)] +=
        union_length(st.intervals);
    st.intervals.clear();
    st.time = std::max(st.time, st.batch_end);
    ++st.pc;
    blocked_resumed_.push_back(r);
  }

  void post_p2p(std::int32_t r, const Op& op) {
    auto& st = state_[static_cast<std::size_t>(r)];
    const auto& prog = g_.ranks[static_cast<std::size_t>(r)];
    st.pending = op.num_sends + op.num_recvs;
    st.batch_end = st.time;
    const double now = st.time;
    for (std::uint32_t i = 0; i < op.num_sends + op.num_recvs; ++i) {
      const auto& t = prog.transfers[op.first_transfer + i];
      const bool send = i < op.num_sends;
      auto& ch = channels_[send ? key(r, t.peer, t.channel) : key(t.peer, r, t.channel)];
      if (send) {
        if (!ch.recvs.empty()) {
          auto rv = ch.recvs.front();
          ch.recvs.pop_front();
          transfer({r, now, t.bytes}, rv.rank, rv.time);
        } else {
          ch.sends.push_back({r, now, t.bytes});
        }
      } else {
        if (!ch.sends.empty()) {
          auto sd = ch.sends.front();
          ch.sends.pop_front();
          transfer(sd, r, now);
        } else {
          ch.recvs.push_back({r, now, 0.0});
        }
      }
    }
  }

  void arrive(std::int32_t r, const Op& op) {
    auto& gs = groups_[static_cast<std::size_t>(op.group)];
    const auto& group = g_.groups[static_cast<std::size_t>(op.group)];
    gs.latest = std::max(gs.latest, state_[static_cast<std::size_t>(r)].time);
    if (++gs.arrived < static_cast<std::int64_t>(group.members.size())) return;
    const double duration =
        ring_collective_seconds(topo_, group, op.collective, op.bytes, op.count);
    const double end = gs.latest + duration;
    result_.activities += group.members.size();
    for (auto m : group.members) {
      auto& st = state_[static_cast<std::size_t>(m)];
      st.time = end;
      ++st.pc;
      result_.ranks[static_cast<std::size_t>(m)].comm_s[static_cast<std::size_t>(op.comm)] +=
          duration;
      blocked_resumed_.push_back(m);
    }
    gs = GroupState{};
  }

  void advance(std::int32_t r) {
    auto& st = state_[static_cast<std::size_t>(r)];
    const auto& ops = g_.ranks[static_cast<std::size_t>(r)].ops;
    auto& stats = result_.ranks[static_cast<std::size_t>(r)];
    while (st.pc < ops.size()) {
      const auto& op = ops[st.pc];
      if (op.type == OpType::kCompute) {
        st.time += op.seconds;
        stats.compute_s += op.seconds;
        ++result_.activities;
        ++st.pc;
        continue;
      }
      blocked_resumed_.clear();
      const std::size_t pc_before = st.pc;
      if (op.type == OpType::kP2P) {
        if (op.num_sends + op.num_recvs == 0) {
          ++st.pc;
          continue;
        }
        post_p2p(r, op);
      } else {
        arrive(r, op);
      }
      // Ranks this step released (other than r itself) can run again.
      for (auto q : blocked_resumed_) {
        if (q != r) runnable_.push_back(q);
      }
      if (st.pc == pc_before) return;  // r is blocked until a peer releases it
    }
    st.done = true;
  }

  const TaskGraph& g_;
  const Topology& topo_;
  std::vector<RankState> state_;
  std::vector<GroupState> groups_;
  std::unordered_map<std::uint64_t, Channel> channels_;
  std::deque<std::int32_t> runnable_;
  std::vector<std::int32_t> blocked_resumed_;
  SimResult result_;
};

}  // namespace

SimResult simulate_analytic(const TaskGraph& graph, const Topology& topology) {
  check_task_graph(graph);
  return AnalyticReplay(graph, topology).run();
}

}  // namespace trainsim
