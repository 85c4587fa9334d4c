// SimGrid replay: one actor per rank. Compute ops are sleeps; point-to-point batches are mailbox
// rendezvous (put_async / get_async, then wait for all); collectives synchronise on a barrier,
// send one bulk flow to the ring successor, pay the remaining steps' latency and synchronise
// again, so the whole group ends together when its slowest edge is done.
#include <xbt/log.h>
#include <simgrid/s4u.hpp>

#include <stdexcept>
#include <unordered_map>

#include "sim/engine/collective.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/interval_union.hpp"
#include "sim/engine/simgrid_zone.hpp"

namespace sg4 = simgrid::s4u;

namespace trainsim {

namespace {

bool g_used = false;
char g_payload = 0;  // SimGrid refuses null payloads; the bytes simulated are given separately

class SimgridReplay {
 public:
  SimgridReplay(const TaskGraph& g, const Topology& topo) : g_(g), topo_(topo) {
    result_.engine = EngineKind::kSimGrid;
    result_.ranks.resize(g.ranks.size());
  }

  SimResult run() {
    int argc = 1;
    char name[] = "trainsim";
    char* argv[] = {name, nullptr};
    sg4::Engine engine(&argc, argv);
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
    auto* zone = new ClusterZone(topo_);  // owned by the engine once it is the root zone
    setup_communicators();
    for (std::int64_t r = 0; r < g_.num_ranks(); ++r) {
      sg4::Actor::create("rank" + std::to_string(r), zone->host(r), [this, r] { rank_main(r); });
    }
    engine.run();
    if (finished_ != g_.num_ranks()) {
      throw std::logic_error("SimGrid replay deadlocked: " +
                             std::to_string(g_.num_ranks() - finished_) + " ranks never finished");
    }
    for (auto& s : result_.ranks) result_.step_time_s = std::max(result_.step_time_s, s.end_s);
    return result_;
  }

 private:
  void setup_communicators() {
    barriers_.reserve(g_.groups.size());
    group_boxes_.resize(g_.groups.size());
    for (std::size_t gi = 0; gi < g_.groups.size(); ++gi) {
      const auto& members = g_.groups[gi].members;
      barriers_.push_back(sg4::Barrier::create(static_cast<unsigned>(members.size())));
      for (std::size_t i = 0; i < members.size(); ++i) {
        group_boxes_[gi].push_back(
            sg4::Mailbox::by_name("g" + std::to_string(gi) + "." + std::to_string(i)));
      }
    }
    position_.assign(g_.ranks.size(), {});
    for (std::size_t gi = 0; gi < g_.groups.size(); ++gi) {
      const auto& members = g_.groups[gi].members;
      for (std::size_t i = 0; i < members.size(); ++i) {
        position_[static_cast<std::size_t>(members[i])][static_cast<std::int32_t>(gi)] = i;
      }
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

  void p2p(std::int64_t r, const Op& op, RankStats& stats) {
    const auto& prog = g_.ranks[static_cast<std::size_t>(r)];
    std::vector<sg4::CommPtr> comms;
    comms.reserve(op.num_sends + op.num_recvs);
    void* sink = nullptr;
    for (std::uint32_t i = 0; i < op.num_sends + op.num_recvs; ++i) {
      const auto& t = prog.transfers[op.first_transfer + i];
      if (i < op.num_sends) {
        comms.push_back(
            p2p_box(r, t.peer, t.channel)
                ->put_async(&g_payload, static_cast<std::uint64_t>(whole_bytes(t.bytes))));
      } else {
        comms.push_back(p2p_box(t.peer, r, t.channel)->get_async(&sink));
      }
    }
    sg4::Comm::wait_all(comms);
    std::vector<std::pair<double, double>> intervals;
    for (const auto& c : comms) intervals.emplace_back(c->get_start_time(), c->get_finish_time());
    stats.comm_s[static_cast<std::size_t>(CommKind::kPP)] += union_length(intervals);
    activities_ += comms.size();
  }

  void collective(std::int64_t r, const Op& op, RankStats& stats) {
    const auto gi = static_cast<std::size_t>(op.group);
    const auto& members = g_.groups[gi].members;
    const auto n = static_cast<std::int64_t>(members.size());
    if (n < 2) return;
    const auto pos = position_[static_cast<std::size_t>(r)].at(op.group);
    const auto next = (pos + 1) % members.size();
    barriers_[gi]->wait();
    const double start = sg4::Engine::get_clock();
    const auto flow = static_cast<std::uint64_t>(ring_flow_bytes(op.collective, op.bytes, n));
    void* sink = nullptr;
    auto send = group_boxes_[gi][next]->put_async(&g_payload, flow);
    auto recv = group_boxes_[gi][pos]->get_async(&sink);
    send->wait();
    recv->wait();
    const double steps = static_cast<double>(ring_steps(op.collective, n) * op.count);
    const double lat = topo_.route_latency(r, members[next]);
    if (steps > 1.0) sg4::this_actor::sleep_for((steps - 1.0) * lat);
    barriers_[gi]->wait();
    stats.comm_s[static_cast<std::size_t>(op.comm)] += sg4::Engine::get_clock() - start;
    activities_ += 5;
  }

  void rank_main(std::int64_t r) {
    auto& stats = result_.ranks[static_cast<std::size_t>(r)];
    for (const auto& op : g_.ranks[static_cast<std::size_t>(r)].ops) {
      switch (op.type) {
        case OpType::kCompute:
          sg4::this_actor::sleep_for(op.seconds);
          stats.compute_s += op.seconds;
          ++activities_;
          break;
        case OpType::kP2P:
          if (op.num_sends + op.num_recvs > 0) p2p(r, op, stats);
          break;
        case OpType::kCollective:
          collective(r, op, stats);
          break;
      }
    }
    stats.end_s = sg4::Engine::get_clock();
    ++finished_;
    result_.activities = activities_;
  }

  const TaskGraph& g_;
  const Topology& topo_;
  std::vector<sg4::BarrierPtr> barriers_;
  std::vector<std::vector<sg4::Mailbox*>> group_boxes_;
  std::vector<std::unordered_map<std::int32_t, std::size_t>> position_;
  std::unordered_map<std::uint64_t, sg4::Mailbox*> p2p_boxes_;
  std::int64_t finished_ = 0;
  std::uint64_t activities_ = 0;
  SimResult result_;
};

}  // namespace

SimResult simulate_simgrid(const TaskGraph& graph, const Topology& topology) {
  if (g_used) {
    throw std::logic_error("SimGrid can run one simulation per process; start a new process");
  }
  g_used = true;
  check_task_graph(graph);
  return SimgridReplay(graph, topology).run();
}

}  // namespace trainsim
