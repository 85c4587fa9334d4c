#include "sim/report/trace.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "sim/memory/timeline.hpp"
#include "sim/plan/layout.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {

namespace {

using Json = nlohmann::ordered_json;

constexpr double kMicro = 1e6;  // trace timestamps are microseconds
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int kComputeTrack = 0;  // then one track per communication kind

const char* pass_letter(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::kForward:
      return "F";
    case ComputeKind::kBackward:
      return "B";
    case ComputeKind::kBackwardInput:
      return "B(input)";
    case ComputeKind::kBackwardWeight:
      return "W";
    case ComputeKind::kRecompute:
      return "R";
    case ComputeKind::kOptimizer:
      return "optimizer";
    case ComputeKind::kOther:
      break;
  }
  return "compute";
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

}  // namespace

std::string trace_json(const Plan& plan, const Platform& platform, const SimResult& sim,
                       const MemoryModel& memory) {
  const Layout layout(plan);
  const ScheduleConfig config = schedule_config(plan);

  Json events = Json::array();
  for (std::int64_t s = 0; s < plan.pp; ++s) {
    const std::int64_t rank = layout.stage_leader(s);
    const std::vector<Span>& timeline = sim.gpu_timeline(rank);
    events.push_back(
        {{"name", "process_name"},
         {"ph", "M"},
         {"pid", s},
         {"args",
          {{"name", "stage " + std::to_string(s) + " (GPU " + std::to_string(rank) + ")"}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", s},
                      {"tid", kComputeTrack},
                      {"args", {{"name", "compute"}}}});
    for (std::size_t k = 0; k < kNumCommKinds; ++k) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", s},
                        {"tid", static_cast<int>(k) + 1},
                        {"args", {{"name", std::string(to_string(static_cast<CommKind>(k)))}}}});
    }

    std::vector<Span> spans = timeline;
    std::stable_sort(spans.begin(), spans.end(),
                     [](const Span& a, const Span& b) { return a.start < b.start; });
    std::vector<Span> compute;
    for (const Span& sp : spans) {
      Json e{{"name", ""}, {"cat", ""}, {"ph", "X"}, {"pid", s}, {"tid", kComputeTrack}};
      if (sp.compute) {
        compute.push_back(sp);
        e["name"] = std::string(pass_letter(sp.compute_kind)) +
                    (sp.microbatch >= 0 ? " mb " + std::to_string(sp.microbatch) : "") +
                    (config.chunks > 1 ? " chunk " + std::to_string(sp.chunk) : "");
        e["cat"] = to_string(sp.compute_kind);
      } else {
        e["name"] = std::string(to_string(sp.comm)) +
                    (sp.microbatch >= 0 ? " mb " + std::to_string(sp.microbatch) : "");
        e["cat"] = to_string(sp.comm);
        e["tid"] = static_cast<int>(sp.comm) + 1;
      }
      e["ts"] = sp.start * kMicro;
      e["dur"] = (sp.end - sp.start) * kMicro;
      events.push_back(std::move(e));
    }

    // Memory: the stage's timeline walk, placed on the replay's clock.
    const StageMemory& sm = memory.stages[static_cast<std::size_t>(s)];
    const auto steps = compute_steps(stage_program(config, s));
    const StepTimes t = step_times(steps, compute);
    auto counter = [&](double time_s, double allocated) {
      events.push_back({{"name", "memory"},
                        {"ph", "C"},
                        {"pid", s},
                        {"ts", time_s * kMicro},
                        {"args", {{"GiB", device_bytes(platform.memory, allocated) / kGiB}}}});
    };
    counter(0.0, sm.base());  // before the first pass: model state and runtime buffers
    for (std::size_t i = 0; i < steps.size(); ++i) {
      counter(t.start[i], sm.timeline.during_step[i]);
      counter(t.end[i], sm.timeline.after_step[i]);
    }
  }

  Json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ms";
  return j.dump(1) + "\n";
}

}  // namespace trainsim
