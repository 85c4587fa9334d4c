#include "sim/report/trace.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "sim/core/units.hpp"
#include "sim/plan/layout.hpp"
#include "sim/report/memory_curve.hpp"
#include "sim/report/trace_events.hpp"

namespace trainsim {

namespace {

using Json = nlohmann::ordered_json;

constexpr double kMicro = 1e6;    // trace timestamps are microseconds
constexpr int kComputeTrack = 0;  // then one track per communication kind

int track_of(const Span& s) {
  return s.compute ? kComputeTrack : static_cast<int>(s.comm) + 1;
}

// Per compute span (in start order), its piece number and the pieces of its pass: a pass that
// waits for parameter all-gathers runs as consecutive ops of the same kind, micro-batch and chunk.
std::vector<std::pair<std::int64_t, std::int64_t>> pieces(const std::vector<Span>& compute) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out(compute.size(), {1, 1});
  const auto same = [](const Span& a, const Span& b) {
    return a.compute_kind == b.compute_kind && a.microbatch == b.microbatch && a.chunk == b.chunk;
  };
  // The compute stream's waits between a pass's pieces are not pieces.
  std::vector<std::size_t> passes;
  for (std::size_t i = 0; i < compute.size(); ++i) {
    if (compute[i].compute_kind != ComputeKind::kWait) passes.push_back(i);
  }
  for (std::size_t i = 0; i < passes.size();) {
    std::size_t j = i + 1;
    while (j < passes.size() && same(compute[passes[i]], compute[passes[j]])) ++j;
    for (std::size_t k = i; k < j; ++k) {
      out[passes[k]] = {static_cast<std::int64_t>(k - i + 1), static_cast<std::int64_t>(j - i)};
    }
    i = j;
  }
  return out;
}

Json slice(const TraceEvent& te, const Span& s, std::int64_t pid) {
  return {{"name", te.name},
          {"cat", te.category},
          {"ph", "X"},
          {"pid", pid},
          {"tid", track_of(s)},
          {"ts", s.start * kMicro},
          {"dur", (s.end - s.start) * kMicro},
          {"args", te.args}};
}

// One message of a pipeline exchange: its sender, receiver and channel, and its place among the
// messages on that triple (the n-th send meets the n-th receive).
using MessageKey = std::tuple<std::int32_t, std::int32_t, std::int32_t, std::int64_t>;

MessageKey message_key(
    const TaskGraph& graph, std::int32_t rank, const Span& s,
    std::map<std::tuple<std::int32_t, std::int32_t, std::int32_t, bool>, std::int64_t>& seen) {
  const RankProgram& prog = graph.ranks[static_cast<std::size_t>(rank)];
  const Op& op = prog.ops[s.op];
  const auto k = static_cast<std::uint32_t>(s.transfer);
  const Transfer& t = prog.transfers[op.first_transfer + k];
  const bool send = k < op.num_sends;
  const std::int32_t src = send ? rank : t.peer, dst = send ? t.peer : rank;
  return {src, dst, t.channel, seen[{src, dst, t.channel, send}]++};
}

}  // namespace

namespace {

// What the trace collects: metadata and counters, the slices, and the pipeline messages seen at
// either end ((pid, tid, ts) of the send and of the receive).
struct TraceEvents {
  Json events = Json::array();
  Json slices = Json::array();
  std::map<MessageKey, std::pair<Json, Json>> messages;
};

// One stage's slices, its message ends, its tracks' names and its memory counter.
void add_stage(const TraceInputs& in, std::int64_t s, std::int64_t gpu, TraceEvents& out) {
  const auto rank = static_cast<std::int32_t>(in.sim.rank_of(gpu));
  std::vector<Span> spans = in.sim.gpu_timeline(gpu);
  std::stable_sort(spans.begin(), spans.end(),
                   [](const Span& a, const Span& b) { return a.start < b.start; });
  const std::vector<Span> compute = compute_in_start_order(spans);
  const auto piece = pieces(compute);
  std::set<int> tracks = {kComputeTrack};
  std::size_t c = 0;
  std::map<std::tuple<std::int32_t, std::int32_t, std::int32_t, bool>, std::int64_t> seen;
  std::map<std::int32_t, std::int32_t> first_forward;  // chunk -> its first forward's micro-batch
  for (const Span& sp : spans) {
    tracks.insert(track_of(sp));
    if (sp.compute) {
      const auto [part, parts] = piece[c++];
      const bool forward = sp.compute_kind == ComputeKind::kForward;
      const bool first =
          forward &&
          first_forward.try_emplace(sp.chunk, sp.microbatch).first->second == sp.microbatch;
      out.slices.push_back(
          slice(compute_event(sp, s, in.partition, in.costs, part, parts, first), sp, s));
      continue;
    }
    out.slices.push_back(slice(comm_event(sp, in.graph, rank), sp, s));
    if (sp.transfer < 0) continue;
    const MessageKey key = message_key(in.graph, rank, sp, seen);
    Json end{{"pid", s}, {"tid", track_of(sp)}, {"ts", sp.start * kMicro}};
    auto& ends = out.messages[key];
    (std::get<0>(key) == rank ? ends.first : ends.second) = std::move(end);
  }
  out.events.push_back(
      {{"name", "process_name"},
       {"ph", "M"},
       {"pid", s},
       {"args", {{"name", "stage " + std::to_string(s) + " (GPU " + std::to_string(gpu) + ")"}}}});
  for (int t : tracks) {
    const std::string name =
        t == kComputeTrack ? "compute" : to_string(static_cast<CommKind>(t - 1));
    out.events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", s}, {"tid", t}, {"args", {{"name", name}}}});
  }
  for (const auto& [t, bytes] : memory_curve(in.plan, in.platform, in.memory, s, compute)) {
    out.events.push_back({{"name", "memory"},
                          {"ph", "C"},
                          {"pid", s},
                          {"ts", t * kMicro},
                          {"args", {{"GiB", bytes / kGiB}}}});
  }
}

}  // namespace

std::string trace_json(const TraceInputs& in) {
  const Layout layout(in.plan);
  TraceEvents t;
  for (std::int64_t s = 0; s < in.plan.pp; ++s) add_stage(in, s, layout.stage_leader(s), t);
  Json events = std::move(t.events);
  for (auto& e : t.slices) events.push_back(std::move(e));
  // Arrows from each send to its receive, where both ends are on stages the trace shows.
  std::int64_t id = 0;
  for (auto& [key, ends] : t.messages) {
    if (ends.first.is_null() || ends.second.is_null()) continue;
    Json from{{"name", "p2p"}, {"cat", "pp"}, {"ph", "s"}, {"id", id}};
    Json to{{"name", "p2p"}, {"cat", "pp"}, {"ph", "f"}, {"bp", "e"}, {"id", id}};
    from.update(ends.first);
    to.update(ends.second);
    events.push_back(std::move(from));
    events.push_back(std::move(to));
    ++id;
  }
  Json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ms";
  return j.dump(1) + "\n";
}

}  // namespace trainsim
