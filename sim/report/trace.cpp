#include "sim/report/trace.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "sim/memory/timeline.hpp"
#include "sim/plan/layout.hpp"
#include "sim/report/trace_events.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {

namespace {

using Json = nlohmann::ordered_json;

constexpr double kMicro = 1e6;  // trace timestamps are microseconds
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kComputeTrack = 0;  // then one track per communication kind

int track_of(const Span& s) {
  return s.compute ? kComputeTrack : static_cast<int>(s.comm) + 1;
}

// Whether a compute span belongs to a schedule step: its own pass, or the recomputation that runs
// right before a backward.
bool belongs(const Span& span, const ComputeStep& step) {
  if (span.microbatch != step.microbatch || span.chunk != step.chunk) return false;
  switch (span.compute_kind) {
    case ComputeKind::kForward:
      return step.pass == Pass::kForward;
    case ComputeKind::kBackward:
      return step.pass == Pass::kBackward;
    case ComputeKind::kBackwardInput:
      return step.pass == Pass::kBackwardInput;
    case ComputeKind::kBackwardWeight:
      return step.pass == Pass::kBackwardWeight;
    case ComputeKind::kRecompute:
      return step.pass == Pass::kBackward || step.pass == Pass::kBackwardInput;
    default:
      return false;
  }
}

// For each step of the stage's program, when its first compute span starts and its last ends.
struct StepTimes {
  std::vector<double> start;
  std::vector<double> end;
};

StepTimes step_times(const std::vector<ComputeStep>& steps, const std::vector<Span>& compute) {
  StepTimes t{std::vector<double>(steps.size(), -1.0), std::vector<double>(steps.size(), -1.0)};
  std::size_t i = 0;
  for (const Span& s : compute) {
    if (s.compute_kind == ComputeKind::kOptimizer || s.compute_kind == ComputeKind::kOther) {
      continue;
    }
    // A span of the current step, or the first of the next one.
    if (i < steps.size() && t.start[i] >= 0 && !belongs(s, steps[i])) ++i;
    if (i >= steps.size() || !belongs(s, steps[i])) {
      throw std::logic_error("trace: a compute span of micro-batch " +
                             std::to_string(s.microbatch) + " does not follow the schedule");
    }
    if (t.start[i] < 0) t.start[i] = s.start;
    t.end[i] = s.end;
  }
  if (!steps.empty() && t.end.back() < 0) {
    throw std::logic_error("trace: the replay ran fewer passes than the schedule has");
  }
  return t;
}

// Per compute span (in start order), its piece number and the pieces of its pass: a pass that
// waits for parameter all-gathers runs as consecutive ops of the same kind, micro-batch and chunk.
std::vector<std::pair<std::int64_t, std::int64_t>> pieces(const std::vector<Span>& compute) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out(compute.size(), {1, 1});
  const auto same = [](const Span& a, const Span& b) {
    return a.compute_kind == b.compute_kind && a.microbatch == b.microbatch && a.chunk == b.chunk;
  };
  for (std::size_t i = 0; i < compute.size();) {
    std::size_t j = i + 1;
    while (j < compute.size() && same(compute[i], compute[j])) ++j;
    for (std::size_t k = i; k < j; ++k) {
      out[k] = {static_cast<std::int64_t>(k - i + 1), static_cast<std::int64_t>(j - i)};
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

// Memory samples on the replay's clock, one per instant (the latest value at a time wins).
void add_counter(std::vector<std::pair<double, double>>& samples, double ts, double gib) {
  if (!samples.empty() && samples.back().first == ts) {
    samples.back().second = gib;
  } else {
    samples.emplace_back(ts, gib);
  }
}

}  // namespace

std::string trace_json(const TraceInputs& in) {
  const Plan& plan = in.plan;
  const Layout layout(plan);
  const ScheduleConfig config = schedule_config(plan);

  Json events = Json::array();
  Json slices = Json::array();
  // Pipeline messages seen at either end: (pid, tid, ts) of the send and of the receive.
  std::map<MessageKey, std::pair<Json, Json>> messages;
  for (std::int64_t s = 0; s < plan.pp; ++s) {
    const std::int64_t gpu = layout.stage_leader(s);
    const auto rank = static_cast<std::int32_t>(in.sim.rank_of(gpu));
    std::vector<Span> spans = in.sim.gpu_timeline(gpu);
    std::stable_sort(spans.begin(), spans.end(),
                     [](const Span& a, const Span& b) { return a.start < b.start; });
    std::vector<Span> compute;
    for (const Span& sp : spans) {
      if (sp.compute) compute.push_back(sp);
    }
    const auto piece = pieces(compute);
    std::set<int> tracks = {kComputeTrack};
    std::size_t c = 0;
    std::map<std::tuple<std::int32_t, std::int32_t, std::int32_t, bool>, std::int64_t> seen;
    for (const Span& sp : spans) {
      tracks.insert(track_of(sp));
      if (sp.compute) {
        const auto [part, parts] = piece[c++];
        slices.push_back(slice(compute_event(sp, s, in.partition, in.costs, part, parts), sp, s));
        continue;
      }
      slices.push_back(slice(comm_event(sp, in.graph, rank), sp, s));
      if (sp.transfer < 0) continue;
      const MessageKey key = message_key(in.graph, rank, sp, seen);
      const bool send = std::get<0>(key) == rank;
      Json end{{"pid", s}, {"tid", track_of(sp)}, {"ts", sp.start * kMicro}};
      (send ? messages[key].first : messages[key].second) = std::move(end);
    }
    events.push_back(
        {{"name", "process_name"},
         {"ph", "M"},
         {"pid", s},
         {"args",
          {{"name", "stage " + std::to_string(s) + " (GPU " + std::to_string(gpu) + ")"}}}});
    for (int t : tracks) {
      const std::string name =
          t == kComputeTrack ? "compute" : to_string(static_cast<CommKind>(t - 1));
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", s},
                        {"tid", t},
                        {"args", {{"name", name}}}});
    }

    // Memory: the stage's timeline walk, placed on the replay's clock.
    const StageMemory& sm = in.memory.stages[static_cast<std::size_t>(s)];
    const auto steps = compute_steps(stage_program(config, s));
    const StepTimes t = step_times(steps, compute);
    const auto gib = [&](double allocated) {
      return device_bytes(in.platform.memory, allocated) / kGiB;
    };
    std::vector<std::pair<double, double>> samples;
    add_counter(samples, 0.0, gib(sm.base()));  // model state and runtime buffers
    for (std::size_t i = 0; i < steps.size(); ++i) {
      add_counter(samples, t.start[i] * kMicro, gib(sm.timeline.during_step[i]));
      add_counter(samples, t.end[i] * kMicro, gib(sm.timeline.after_step[i]));
    }
    for (const auto& [ts, value] : samples) {
      events.push_back(
          {{"name", "memory"}, {"ph", "C"}, {"pid", s}, {"ts", ts}, {"args", {{"GiB", value}}}});
    }
  }
  for (auto& e : slices) events.push_back(std::move(e));
  // Arrows from each send to its receive, where both ends are on stages the trace shows.
  std::int64_t id = 0;
  for (auto& [key, ends] : messages) {
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
