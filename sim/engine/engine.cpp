#include "sim/engine/engine.hpp"

#include <algorithm>
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

RankStats summarize(std::vector<Span> spans, double end_s) {
  RankStats st;
  st.end_s = end_s;
  // Sweep over span boundaries: each elementary segment is compute, exposed communication of
  // the kinds in progress, or idle.
  struct Edge {
    double t;
    int delta;
    int kind;  // -1 compute, else comm kind
  };
  std::vector<Edge> edges;
  edges.reserve(spans.size() * 2);
  for (const auto& s : spans) {
    if (s.end <= s.start) continue;
    const int kind = s.compute ? -1 : static_cast<int>(s.comm);
    edges.push_back({s.start, +1, kind});
    edges.push_back({s.end, -1, kind});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.t < b.t || (a.t == b.t && a.delta < b.delta);
  });
  int compute = 0;
  std::array<int, kNumCommKinds> active{};
  double prev = edges.empty() ? 0.0 : edges.front().t;
  for (const auto& e : edges) {
    const double len = e.t - prev;
    if (len > 0) {
      int kinds = 0;
      for (auto a : active) kinds += a > 0 ? 1 : 0;
      if (compute > 0) st.compute_s += len;
      for (std::size_t k = 0; k < kNumCommKinds; ++k) {
        if (active[k] <= 0) continue;
        st.comm_total_s[k] += len;
        if (compute == 0) {
          st.comm_s[k] += len / static_cast<double>(kinds);
        } else {
          st.comm_hidden_s[k] += len;
        }
      }
    }
    prev = e.t;
    if (e.kind < 0) {
      compute += e.delta;
    } else {
      active[static_cast<std::size_t>(e.kind)] += e.delta;
    }
  }
  return st;
}

std::vector<std::vector<std::int32_t>> collective_call_numbers(const TaskGraph& graph) {
  std::vector<std::vector<std::int32_t>> out(graph.ranks.size());
  for (std::size_t r = 0; r < graph.ranks.size(); ++r) {
    std::map<std::int32_t, std::int32_t> next;
    for (const auto& op : graph.ranks[r].ops) {
      out[r].push_back(op.type == OpType::kCollective ? next[op.group]++ : -1);
    }
  }
  return out;
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
    for (std::size_t i = 0; i < prog.ops.size(); ++i) {
      const auto& op = prog.ops[i];
      if (op.first_dep + op.num_deps > prog.deps.size()) {
        throw std::invalid_argument("rank " + std::to_string(r) + " op " + std::to_string(i) +
                                    " has dependencies past the list");
      }
      for (std::uint32_t d = 0; d < op.num_deps; ++d) {
        if (prog.deps[op.first_dep + d] >= i) {
          throw std::invalid_argument("rank " + std::to_string(r) + " op " + std::to_string(i) +
                                      " depends on a later op");
        }
      }
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
        for (std::uint32_t k = 0; k < op.num_sends + op.num_recvs; ++k) {
          const auto& t = prog.transfers[op.first_transfer + k];
          if (t.peer < 0 || t.peer >= world || t.peer == r) {
            throw std::invalid_argument("rank " + std::to_string(r) +
                                        " exchanges with invalid peer " + std::to_string(t.peer));
          }
          const bool send = k < op.num_sends;
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

SimResult simulate(const TaskGraph& graph, const Topology& topology, EngineKind engine,
                   const EngineOptions& options) {
  return engine == EngineKind::kSimGrid ? simulate_simgrid(graph, topology, options)
                                        : simulate_analytic(graph, topology, options);
}

}  // namespace trainsim
