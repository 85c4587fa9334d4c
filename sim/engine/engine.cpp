#include "sim/engine/engine.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
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

namespace {

// One segment of the sweep: compute hides the communication in progress; a wait exposes the
// kinds it waits for (equal shares) and hides the others; else the kinds in progress share it.
void add_segment(RankStats& st, double len, int compute,
                 const std::array<int, kNumCommKinds>& active,
                 const std::array<int, kNumCommKinds>& waiting) {
  int waited = 0, kinds = 0;
  for (std::size_t k = 0; k < kNumCommKinds; ++k) {
    waited += waiting[k] > 0 ? 1 : 0;
    kinds += active[k] > 0 ? 1 : 0;
  }
  if (compute > 0) st.compute_s += len;
  for (std::size_t k = 0; k < kNumCommKinds; ++k) {
    if (waited > 0 && compute == 0) {
      if (waiting[k] > 0) {
        st.comm_s[k] += len / static_cast<double>(waited);
      } else if (active[k] > 0) {
        st.comm_hidden_s[k] += len;
      }
    } else if (active[k] > 0 && compute > 0) {
      st.comm_hidden_s[k] += len;
    } else if (active[k] > 0) {
      st.comm_s[k] += len / static_cast<double>(kinds);
    }
    if (active[k] > 0) st.comm_total_s[k] += len;
  }
}

}  // namespace

RankStats summarize(std::vector<Span> spans, double end_s) {
  RankStats st;
  st.end_s = end_s;
  // Sweep over span boundaries: each elementary segment is compute, the compute stream's wait
  // for calls beside a pass (exposed communication of the kinds waited for), exposed
  // communication of the kinds in progress, or idle.
  struct Edge {
    double t;
    int delta;
    int kind;  // -1 compute, [0, kNumCommKinds) comm kind in progress, then a wait for a kind
  };
  constexpr int kWaitBase = static_cast<int>(kNumCommKinds);
  std::vector<Edge> edges;
  edges.reserve(spans.size() * 2);
  for (const auto& s : spans) {
    if (s.end <= s.start) continue;
    const int kind = !s.compute                             ? static_cast<int>(s.comm)
                     : s.compute_kind == ComputeKind::kWait ? kWaitBase + static_cast<int>(s.comm)
                                                            : -1;
    edges.push_back({s.start, +1, kind});
    edges.push_back({s.end, -1, kind});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.t < b.t || (a.t == b.t && a.delta < b.delta);
  });
  int compute = 0;
  std::array<int, kNumCommKinds> active{};
  std::array<int, kNumCommKinds> waiting{};
  double prev = edges.empty() ? 0.0 : edges.front().t;
  std::array<bool, kNumCommKinds> waited{};
  for (const auto& e : edges) {
    if (const double len = e.t - prev; len > 0) add_segment(st, len, compute, active, waiting);
    prev = e.t;
    if (e.kind >= kWaitBase) waited[static_cast<std::size_t>(e.kind - kWaitBase)] = true;
    if (e.kind < 0) {
      compute += e.delta;
    } else if (e.kind >= kWaitBase) {
      waiting[static_cast<std::size_t>(e.kind - kWaitBase)] += e.delta;
    } else {
      active[static_cast<std::size_t>(e.kind)] += e.delta;
    }
  }
  // A kind the compute stream waited for: its calls ran as one op beside each pass, which
  // overlaps more of the pass's kernels than the layers' own pairing hides (each layer's calls
  // beside that layer's kernels only, the wait standing for the rest); what is not exposed of
  // its transfer time is what was hidden.
  for (std::size_t k = 0; k < kNumCommKinds; ++k) {
    if (waited[k]) st.comm_hidden_s[k] = std::max(0.0, st.comm_total_s[k] - st.comm_s[k]);
  }
  return st;
}

std::vector<std::vector<std::int32_t>> collective_call_numbers(const TaskGraph& graph) {
  std::vector<std::vector<std::int32_t>> out(graph.ranks.size());
  for (std::size_t r = 0; r < graph.ranks.size(); ++r) {
    std::vector<std::int32_t> next(graph.groups.size(), 0);
    out[r].reserve(graph.ranks[r].ops.size());
    for (const auto& op : graph.ranks[r].ops) {
      out[r].push_back(op.type == OpType::kCollective && op.group >= 0 &&
                               static_cast<std::size_t>(op.group) < next.size()
                           ? next[static_cast<std::size_t>(op.group)]++
                           : -1);
    }
  }
  return out;
}

namespace {

[[noreturn]] void bad_graph(const std::string& what) {
  throw std::invalid_argument(what);
}

// Groups: members are GPUs, their replaying ranks graph ranks; returns each rank's groups.
std::vector<std::vector<std::int32_t>> check_groups(const TaskGraph& graph) {
  const auto gpus = graph.num_gpus(), ranks = graph.num_ranks();
  std::vector<std::vector<std::int32_t>> groups_of(static_cast<std::size_t>(ranks));
  for (std::size_t g = 0; g < graph.groups.size(); ++g) {
    const auto& grp = graph.groups[g];
    if (grp.members.empty()) bad_graph("group " + std::to_string(g) + " is empty");
    for (auto m : grp.members) {
      if (m < 0 || m >= gpus) {
        bad_graph("group " + std::to_string(g) + " names GPU " + std::to_string(m) +
                  " outside [0, " + std::to_string(gpus) + ")");
      }
    }
    for (auto r : graph.ranks_of(grp)) {
      if (r < 0 || r >= ranks) {
        bad_graph("group " + std::to_string(g) + " is replayed by rank " + std::to_string(r) +
                  " outside [0, " + std::to_string(ranks) + ")");
      }
      groups_of[static_cast<std::size_t>(r)].push_back(static_cast<std::int32_t>(g));
    }
  }
  if (graph.symmetric()) {
    if (static_cast<std::int64_t>(graph.replayed_by.size()) != gpus) {
      bad_graph("replayed_by does not name a rank for every GPU");
    }
    for (auto r : graph.replayed_by) {
      if (r < 0 || r >= ranks) bad_graph("a GPU is replayed by rank " + std::to_string(r));
    }
  }
  return groups_of;
}

void check_op(const TaskGraph& graph, std::int64_t r, std::size_t i,
              std::map<std::tuple<std::int64_t, std::int64_t, std::int32_t>, std::int64_t>& balance,
              std::vector<std::int64_t>& calls) {
  const auto& prog = graph.ranks[static_cast<std::size_t>(r)];
  const auto& op = prog.ops[i];
  const auto where = [&] { return "rank " + std::to_string(r) + " op " + std::to_string(i); };
  if (op.first_dep + op.num_deps > prog.deps.size()) {
    bad_graph(where() + " has dependencies past the list");
  }
  for (std::uint32_t d = 0; d < op.num_deps; ++d) {
    if (prog.deps[op.first_dep + d] >= i) bad_graph(where() + " depends on a later op");
  }
  // A NaN or infinite duration would poison every time after it without a word.
  if (!std::isfinite(op.seconds) || op.seconds < 0 || !std::isfinite(op.bytes) || op.bytes < 0) {
    bad_graph(where() + " has a duration or size that is negative, infinite or NaN");
  }
  if (op.type == OpType::kCollective) {
    if (op.group < 0 || static_cast<std::size_t>(op.group) >= graph.groups.size()) {
      bad_graph("rank " + std::to_string(r) + " calls unknown group " + std::to_string(op.group));
    }
    ++calls[static_cast<std::size_t>(op.group)];
  } else if (op.type == OpType::kP2P) {
    if (op.first_transfer + op.num_sends + op.num_recvs > prog.transfers.size()) {
      bad_graph("rank " + std::to_string(r) + " has a p2p op past its transfers");
    }
    for (std::uint32_t k = 0; k < op.num_sends + op.num_recvs; ++k) {
      const auto& t = prog.transfers[op.first_transfer + k];
      if (t.peer < 0 || t.peer >= graph.num_ranks() || t.peer == r) {
        bad_graph("rank " + std::to_string(r) + " exchanges with invalid peer " +
                  std::to_string(t.peer));
      }
      if (!std::isfinite(t.bytes) || t.bytes < 0) {
        bad_graph(where() + " transfers a size that is negative, infinite or NaN");
      }
      const bool send = k < op.num_sends;
      auto key = send ? std::make_tuple(r, std::int64_t{t.peer}, t.channel)
                      : std::make_tuple(std::int64_t{t.peer}, r, t.channel);
      balance[key] += send ? 1 : -1;
    }
  }
}

}  // namespace

void check_task_graph(const TaskGraph& graph) {
  const auto groups_of = check_groups(graph);
  std::map<std::tuple<std::int64_t, std::int64_t, std::int32_t>, std::int64_t> balance;
  std::vector<std::int64_t> expected(graph.groups.size(), -1);
  std::vector<std::int64_t> calls(graph.groups.size(), 0);  // this rank's, by group
  for (std::int64_t r = 0; r < graph.num_ranks(); ++r) {
    const auto& prog = graph.ranks[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < prog.ops.size(); ++i) check_op(graph, r, i, balance, calls);
    // Every group the rank replays gets the same number of calls from each of its ranks, and
    // no other group any.
    const auto& mine = groups_of[static_cast<std::size_t>(r)];
    for (auto g : mine) {
      const auto u = static_cast<std::size_t>(g);
      auto& want = expected[u];
      if (want < 0) want = calls[u];
      if (calls[u] != want) {
        bad_graph("rank " + std::to_string(r) + " makes " + std::to_string(calls[u]) +
                  " calls on group " + std::to_string(g) + ", expected " + std::to_string(want));
      }
      calls[u] = -calls[u] - 1;  // seen: a member's calls
    }
    for (const auto& op : prog.ops) {
      if (op.type != OpType::kCollective) continue;
      const auto u = static_cast<std::size_t>(op.group);
      if (calls[u] > 0) {
        bad_graph("rank " + std::to_string(r) + " makes " + std::to_string(calls[u]) +
                  " calls on group " + std::to_string(op.group) + ", expected 0");
      }
    }
    for (const auto& op : prog.ops) {
      if (op.type == OpType::kCollective) calls[static_cast<std::size_t>(op.group)] = 0;
    }
    for (auto g : mine) calls[static_cast<std::size_t>(g)] = 0;
  }
  for (const auto& [key, b] : balance) {
    if (b != 0) {
      bad_graph("rank " + std::to_string(std::get<0>(key)) + " sends " +
                (b > 0 ? "more" : "fewer") + " messages to rank " +
                std::to_string(std::get<1>(key)) + " on channel " +
                std::to_string(std::get<2>(key)) + " than it receives");
    }
  }
}

SimResult name_gpus(const TaskGraph& graph, SimResult replayed) {
  replayed.replayed_by = graph.replayed_by;
  return replayed;
}

std::int64_t SimResult::num_gpus() const {
  return replayed_by.empty() ? static_cast<std::int64_t>(ranks.size())
                             : static_cast<std::int64_t>(replayed_by.size());
}

std::int64_t SimResult::rank_of(std::int64_t gpu) const {
  assert(gpu >= 0 && gpu < num_gpus());
  return replayed_by.empty() ? gpu : replayed_by[static_cast<std::size_t>(gpu)];
}

const RankStats& SimResult::gpu_stats(std::int64_t gpu) const {
  return ranks[static_cast<std::size_t>(rank_of(gpu))];
}

const std::vector<Span>& SimResult::gpu_timeline(std::int64_t gpu) const {
  const auto r = static_cast<std::size_t>(rank_of(gpu));
  if (r >= timelines.size()) throw std::logic_error("the replay kept no timeline (keep_timelines)");
  return timelines[r];
}

SimResult simulate(const TaskGraph& graph, const Topology& topology, EngineKind engine,
                   const EngineOptions& options) {
  return engine == EngineKind::kSimGrid ? simulate_simgrid(graph, topology, options)
                                        : simulate_analytic(graph, topology, options);
}

}  // namespace trainsim
