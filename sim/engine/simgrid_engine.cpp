// SimGrid replay: one actor per stream of each rank. Compute ops are sleeps (or executions on
// the GPU's host when communication slows compute down); point-to-point batches are mailbox
// rendezvous (put_async / get_async, then wait for all); a collective synchronises its members
// on a barrier of its own, sends its flows of the algorithm NCCL would pick (sim/collective/),
// pays their remaining latency and synchronises again, so the whole group ends together when its
// slowest flow is done. Dependencies between streams of a rank wait on a condition variable.
#include <xbt/log.h>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <csignal>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "sim/core/progress.hpp"
#include "sim/engine/collective_replay.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/simgrid_zone.hpp"

namespace sg4 = simgrid::s4u;

namespace trainsim {

namespace {

bool g_used = false;
char g_payload = 0;  // SimGrid refuses null payloads; the bytes simulated are given separately

struct RankState {
  std::vector<char> done;
  sg4::MutexPtr mutex;
  sg4::ConditionVariablePtr cv;
  int waiting = 0;
  int active_comms = 0;  // transfers of this GPU in progress (for the compute slowdown)
  sg4::ExecPtr interference;
  std::vector<Span> spans;
  double end = 0;
};

struct CollectiveInstance {
  sg4::BarrierPtr barrier;
  std::int64_t left = 0;  // members that have not passed the closing barrier yet
};

class SimgridReplay {
 public:
  SimgridReplay(const TaskGraph& g, const Topology& topo, const EngineOptions& options)
      : g_(g),
        topo_(topo),
        options_(options),
        calls_(collective_call_numbers(g)),
        groups_(group_collectives(g, topo, options.shapes != nullptr ? *options.shapes : shapes_)),
        flows_(g, topo, groups_) {
    result_.engine = EngineKind::kSimGrid;
  }

  SimResult run() {
    int argc = 1;
    char name[] = "trainsim";
    char* argv[] = {name, nullptr};
    // SimGrid sets its own SIGINT handler (print the actors, exit 1); the program's stays.
    struct sigaction on_int {
    }, on_term{};
    ::sigaction(SIGINT, nullptr, &on_int);
    ::sigaction(SIGTERM, nullptr, &on_term);
    sg4::Engine engine(&argc, argv);
    ::sigaction(SIGINT, &on_int, nullptr);
    ::sigaction(SIGTERM, &on_term, nullptr);
    xbt_log_control_set("root.thresh:critical");
    // Exact flow-level sharing: no latency or bandwidth factors, no reverse-traffic share, no
    // TCP window cap (see SimGrid's CM02 model). Must be set before the first zone exists.
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/crosstraffic:0");
    sg4::Engine::set_config("network/TCP-gamma:0");
    sg4::Engine::set_config("contexts/stack-size:256");
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer cannot follow SimGrid's raw stack switches; threads are slower but
    // visible to it.
    sg4::Engine::set_config("contexts/factory:thread");
#endif
    // Owned by the engine as the root zone: the replaying ranks' GPUs and the routes they use.
    zone_ = new ClusterZone(topo_, replaying_gpus(), routes_used(), flows_.folds());
    auto* zone = zone_;
    setup();
    for (std::int64_t r = 0; r < g_.num_ranks(); ++r) {
      const auto& ops = g_.ranks[static_cast<std::size_t>(r)].ops;
      std::map<Stream, std::vector<std::uint32_t>> streams;
      for (std::uint32_t i = 0; i < ops.size(); ++i) streams[ops[i].stream].push_back(i);
      for (auto& [stream, list] : streams) {
        ++actors_;
        sg4::Actor::create("rank" + std::to_string(r) + "." + to_string(stream),
                           zone->host(g_.gpu_of(r)),
                           [this, r, list = std::move(list)] { stream_main(r, list); });
      }
    }
    if (options_.progress != nullptr) options_.progress->total += g_.num_ops();
    engine.run();
    if (finished_ != actors_) {
      throw std::logic_error("SimGrid replay deadlocked: " + std::to_string(actors_ - finished_) +
                             " streams never finished");
    }
    result_.ranks.resize(g_.ranks.size());
    if (options_.list_collectives) result_.collectives = collective_stats(g_, topo_, groups_);
    for (std::size_t r = 0; r < g_.ranks.size(); ++r) {
      auto& st = ranks_[r];
      result_.step_time_s = std::max(result_.step_time_s, st.end);
      result_.ranks[r] = summarize(st.spans, st.end);
      if (options_.keep_timelines) result_.timelines.push_back(std::move(st.spans));
    }
    result_.activities = activities_;
    return result_;
  }

 private:
  std::vector<std::int64_t> replaying_gpus() const {
    std::vector<std::int64_t> gpus;
    for (std::int64_t r = 0; r < g_.num_ranks(); ++r) gpus.push_back(g_.gpu_of(r));
    return gpus;
  }

  // GPU pairs a transfer may go between: point-to-point peers, and the flows of the groups every
  // member of which replays its own.
  std::vector<std::pair<std::int64_t, std::int64_t>> routes_used() const {
    auto out = flows_.routes();
    for (std::int64_t r = 0; r < g_.num_ranks(); ++r) {
      for (const auto& t : g_.ranks[static_cast<std::size_t>(r)].transfers) {
        out.emplace_back(g_.gpu_of(r), g_.gpu_of(t.peer));
        out.emplace_back(g_.gpu_of(t.peer), g_.gpu_of(r));
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  void setup() {
    ranks_.resize(g_.ranks.size());
    for (std::size_t r = 0; r < g_.ranks.size(); ++r) {
      ranks_[r].done.assign(g_.ranks[r].ops.size(), 0);
      ranks_[r].mutex = sg4::Mutex::create();
      ranks_[r].cv = sg4::ConditionVariable::create();
    }
  }

  sg4::Mailbox* p2p_box(std::int64_t src, std::int64_t dst, std::int32_t channel) {
    const auto k = (static_cast<std::uint64_t>(src) * static_cast<std::uint64_t>(g_.ranks.size()) +
                    static_cast<std::uint64_t>(dst)) *
                       64u +
                   static_cast<std::uint64_t>(channel);
    auto it = p2p_boxes_.find(k);
    if (it != p2p_boxes_.end()) return it->second;
    auto* box = sg4::Mailbox::by_name("p" + std::to_string(src) + ">" + std::to_string(dst) + ":" +
                                      std::to_string(channel));
    p2p_boxes_.emplace(k, box);
    return box;
  }

  void wait_for_dependencies(std::int64_t r, const Op& op) {
    auto& st = ranks_[static_cast<std::size_t>(r)];
    const auto& deps = g_.ranks[static_cast<std::size_t>(r)].deps;
    auto ready = [&] {
      for (std::uint32_t d = 0; d < op.num_deps; ++d) {
        if (!st.done[deps[op.first_dep + d]]) return false;
      }
      return true;
    };
    if (ready()) return;
    std::unique_lock<sg4::Mutex> lock(*st.mutex);
    ++st.waiting;
    while (!ready()) st.cv->wait(lock);
    --st.waiting;
  }

  void mark_done(std::int64_t r, std::uint32_t i) {
    auto& st = ranks_[static_cast<std::size_t>(r)];
    st.done[i] = 1;
    if (st.waiting > 0) st.cv->notify_all();
  }

  // While any transfer of this GPU is in progress, compute kernels share the GPU with it: one
  // background execution of priority f / (1 - f) leaves compute a share 1 - f of the GPU.
  class CommKernel {
   public:
    CommKernel(SimgridReplay& replay, std::int64_t r)
        : st_(replay.ranks_[static_cast<std::size_t>(r)]) {
      const double f = replay.options_.compute_slowdown;
      if (st_.active_comms++ == 0 && f > 0) {
        st_.interference = sg4::this_actor::exec_init(1e30)->set_priority(f / (1.0 - f));
        st_.interference->start();
      }
    }
    ~CommKernel() {
      if (--st_.active_comms == 0 && st_.interference) {
        st_.interference->cancel();
        st_.interference = nullptr;
      }
    }
    CommKernel(const CommKernel&) = delete;
    CommKernel& operator=(const CommKernel&) = delete;

   private:
    RankState& st_;
  };

  void compute(std::int64_t r, std::uint32_t i, const Op& op) {
    const double start = sg4::Engine::get_clock();
    if (options_.compute_slowdown > 0) {
      sg4::this_actor::exec_init(op.seconds)->start()->wait();
    } else {
      sg4::this_actor::sleep_for(op.seconds);
    }
    ranks_[static_cast<std::size_t>(r)].spans.push_back({start, sg4::Engine::get_clock(), true,
                                                         op.compute, op.comm, op.microbatch,
                                                         op.chunk, -1, i});
    ++activities_;
  }

  void p2p(std::int64_t r, std::uint32_t i, const Op& op) {
    if (op.num_sends + op.num_recvs == 0) return;
    const auto& prog = g_.ranks[static_cast<std::size_t>(r)];
    std::vector<sg4::CommPtr> comms;
    comms.reserve(op.num_sends + op.num_recvs);
    void* sink = nullptr;
    {
      // The sender's GPU carries the transfer's interference: a receive posted early (Megatron
      // posts the next one as soon as it can) waits for its sender without taking SMs.
      std::optional<CommKernel> kernel;
      if (op.num_sends > 0) kernel.emplace(*this, r);
      for (std::uint32_t k = 0; k < op.num_sends + op.num_recvs; ++k) {
        const auto& t = prog.transfers[op.first_transfer + k];
        if (k < op.num_sends) {
          comms.push_back(
              p2p_box(r, t.peer, t.channel)
                  ->put_async(&g_payload, static_cast<std::uint64_t>(whole_bytes(t.bytes))));
        } else {
          comms.push_back(p2p_box(t.peer, r, t.channel)->get_async(&sink));
        }
      }
      sg4::Comm::wait_all(comms);
    }
    auto& spans = ranks_[static_cast<std::size_t>(r)].spans;
    for (std::size_t k = 0; k < comms.size(); ++k) {
      spans.push_back({comms[k]->get_start_time(), comms[k]->get_finish_time(), false,
                       ComputeKind::kOther, CommKind::kPP, op.microbatch, 0,
                       static_cast<std::int16_t>(k), i});
    }
    activities_ += comms.size();
  }

  void collective(std::int64_t r, std::uint32_t i, const Op& op) {
    const auto& group = g_.groups[static_cast<std::size_t>(op.group)];
    if (group.members.size() < 2) return;
    const auto call = calls_[static_cast<std::size_t>(r)][i];
    auto& inst = instances_[{op.group, call}];
    if (!inst.barrier) {
      const auto replaying = static_cast<std::int64_t>(g_.ranks_of(group).size());
      inst.barrier = sg4::Barrier::create(static_cast<unsigned>(replaying));
      inst.left = replaying;
    }
    const sg4::BarrierPtr barrier = inst.barrier;  // keep it alive past the erase below
    barrier->wait();
    const double start = sg4::Engine::get_clock();
    {
      CommKernel kernel(*this, r);
      const auto algorithm = groups_[static_cast<std::size_t>(op.group)]
                                 .choose(op.collective, op.bytes, op.count)
                                 .algorithm;
      const double end = send_flows(
          r, flows_.sent(op.group, op.collective, algorithm, g_.gpu_of(r)), op.bytes, op.count);
      if (end > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(end);
      barrier->wait();
    }
    auto it = instances_.find({op.group, call});
    if (--it->second.left == 0) instances_.erase(it);
    ranks_[static_cast<std::size_t>(r)].spans.push_back({start, sg4::Engine::get_clock(), false,
                                                         ComputeKind::kOther, op.comm,
                                                         op.microbatch, 0, -1, i});
    activities_ += 5;
  }

  // This GPU's flows of one collective, all at once; returns when the last of them has paid its
  // remaining latency (every call pays the algorithm's latency, the network charged one route's).
  double send_flows(std::int64_t r, const std::vector<SentFlow>& flows, double bytes,
                    std::int64_t count) {
    const auto gpu = g_.gpu_of(r);
    std::vector<sg4::CommPtr> comms;
    comms.reserve(flows.size());
    for (const auto& f : flows) {
      auto* dst = f.fold >= 0 ? zone_->fold_host(static_cast<std::size_t>(f.fold)) : host(f.dst);
      comms.push_back(sg4::Comm::sendto_async(
          host(gpu), dst, static_cast<std::uint64_t>(whole_bytes(bytes * f.share))));
    }
    double end = sg4::Engine::get_clock();
    for (std::size_t k = 0; k < comms.size(); ++k) {
      comms[k]->wait();
      const auto& f = flows[k];
      end = std::max(end, comms[k]->get_finish_time() + static_cast<double>(count) * f.latency_s -
                              f.route_latency_s);
    }
    return end;
  }

  sg4::Host* host(std::int64_t gpu) const {
    return zone_->host(gpu);
  }

  void stream_main(std::int64_t r, const std::vector<std::uint32_t>& ops) {
    const auto& prog = g_.ranks[static_cast<std::size_t>(r)];
    for (auto i : ops) {
      const auto& op = prog.ops[i];
      wait_for_dependencies(r, op);
      switch (op.type) {
        case OpType::kCompute:
          compute(r, i, op);
          break;
        case OpType::kP2P:
          p2p(r, i, op);
          break;
        case OpType::kCollective:
          collective(r, i, op);
          break;
      }
      mark_done(r, i);
      if (options_.progress != nullptr) {
        options_.progress->done.fetch_add(1, std::memory_order_relaxed);
      }
    }
    auto& st = ranks_[static_cast<std::size_t>(r)];
    st.end = std::max(st.end, sg4::Engine::get_clock());
    ++finished_;
  }

  const TaskGraph& g_;
  const Topology& topo_;
  EngineOptions options_;
  std::vector<std::vector<std::int32_t>> calls_;
  CollectiveShapes shapes_;  // when the caller shares none
  std::vector<GroupCollectives> groups_;
  CollectiveReplayPlan flows_;
  ClusterZone* zone_ = nullptr;
  std::vector<RankState> ranks_;
  std::map<std::pair<std::int32_t, std::int32_t>, CollectiveInstance> instances_;
  std::unordered_map<std::uint64_t, sg4::Mailbox*> p2p_boxes_;
  std::int64_t actors_ = 0;
  std::int64_t finished_ = 0;
  std::uint64_t activities_ = 0;
  SimResult result_;
};

}  // namespace

SimResult simulate_simgrid(const TaskGraph& graph, const Topology& topology,
                           const EngineOptions& options) {
  if (g_used) {
    throw std::logic_error("SimGrid can run one simulation per process; start a new process");
  }
  g_used = true;
  check_task_graph(graph);
  SimResult replayed = SimgridReplay(graph, topology, options).run();
  return name_gpus(graph, std::move(replayed));
}

}  // namespace trainsim
