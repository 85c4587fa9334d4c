#include "sim/engine/engine.hpp"

#include <map>
#include <stdexcept>
#include <tuple>

namespace trainsim {

const char* to_string(EngineKind kind) {
  return kind == EngineKind::kSimGrid ? "simgrid" : "analytic";
}

double RankStats::comm_total() const {
  double t = 0;
  for (double c : comm_s) t += c;
  return t;
}

void check_task_graph(const TaskGraph& graph) {
  const auto world = graph.num_ranks();
  std::map<std::tuple<std::int64_t, std::int64_t, std::int32_t>, std::int64_t> balance;
  std::vector<std::vector<std::int64_t>> calls(graph.groups.size());
  for (std::size_t g = 0; g < graph.groups.size(); ++g) {
    const auto& members = graph.groups[g].members;
    if (members.empty()) throw std::invalid_argument("group " + std::to_string(g) + " is empty");
    for (auto m : members) {
      if (m < 0 || m >= world) {
        throw std::invalid_argument("group " + std::to_string(g) + " names rank " +
                                    std::to_string(m) + " outside [0, " + std::to_string(world) +
                                    ")");
      }
    }
    calls[g].assign(static_cast<std::size_t>(world), 0);
  }
  for (std::int64_t r = 0; r < world; ++r) {
    const auto& prog = graph.ranks[static_cast<std::size_t>(r)];
    for (const auto& op : prog.ops) {
      if (op.type == OpType::kCollective) {
        if (op.group < 0 || static_cast<std::size_t>(op.group) >= graph.groups.size()) {
          throw std::invalid_argument("rank " + std::to_string(r) + " calls unknown group " +
                                      std::to_string(op.group));
        }
        calls[static_cast<std::size_t>(op.group)][static_cast<std::size_t>(r)]++;
      } else if (op.type == OpType::kP2P) {
        if (op.first_transfer + op.num_sends + op.num_recvs > prog.transfers.size()) {
          throw std::invalid_argument("rank " + std::to_string(r) +
                                      " has a p2p op past its transfers");
        }
        for (std::uint32_t i = 0; i < op.num_sends + op.num_recvs; ++i) {
          const auto& t = prog.transfers[op.first_transfer + i];
          if (t.peer < 0 || t.peer >= world || t.peer == r) {
            throw std::invalid_argument("rank " + std::to_string(r) +
                                        " exchanges with invalid peer " + std::to_string(t.peer));
          }
          const bool send = i < op.num_sends;
          auto key = send ? std::make_tuple(r, std::int64_t{t.peer}, t.channel)
                          : std::make_tuple(std::int64_t{t.peer}, r, t.channel);
          balance[key] += send ? 1 : -1;
        }
      }
    }
  }
  for (const auto& [key, b] : balance) {
    if (b != 0) {
      throw std::invalid_argument("rank " + std::to_string(std::get<0>(key)) + " sends " +
                                  (b > 0 ? "more" : "fewer") + " messages to rank " +
                                  std::to_string(std::get<1>(key)) + " on channel " +
                                  std::to_string(std::get<2>(key)) + " than it receives");
    }
  }
  for (std::size_t g = 0; g < graph.groups.size(); ++g) {
    const auto& members = graph.groups[g].members;
    const auto expected = calls[g][static_cast<std::size_t>(members[0])];
    for (std::int64_t r = 0; r < world; ++r) {
      const auto c = calls[g][static_cast<std::size_t>(r)];
      bool member = false;
      for (auto m : members) member = member || m == r;
      if ((member && c != expected) || (!member && c != 0)) {
        throw std::invalid_argument("rank " + std::to_string(r) + " makes " + std::to_string(c) +
                                    " calls on group " + std::to_string(g) + ", expected " +
                                    std::to_string(member ? expected : 0));
      }
    }
  }
}

SimResult simulate(const TaskGraph& graph, const Topology& topology, EngineKind engine) {
  return engine == EngineKind::kSimGrid ? simulate_simgrid(graph, topology)
                                        : simulate_analytic(graph, topology);
}

}  // namespace trainsim
