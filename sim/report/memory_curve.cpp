#include "sim/report/memory_curve.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/memory/timeline.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {

namespace {

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
    // The optimizer step and work of no micro-batch (the deferred LM-head weight gradients of
    // the flush) belong to no step of the schedule.
    if (s.compute_kind == ComputeKind::kOptimizer || s.compute_kind == ComputeKind::kOther ||
        s.microbatch < 0) {
      continue;
    }
    // A wait after a pass's kernels ends that pass.
    if (s.compute_kind == ComputeKind::kWait) {
      if (i < steps.size() && t.start[i] >= 0) t.end[i] = s.end;
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

void add_sample(std::vector<std::pair<double, double>>& samples, double t, double bytes) {
  if (!samples.empty() && samples.back().first == t) {
    samples.back().second = bytes;
  } else {
    samples.emplace_back(t, bytes);
  }
}

}  // namespace

std::vector<Span> compute_in_start_order(const std::vector<Span>& timeline) {
  std::vector<Span> compute;
  for (const Span& s : timeline) {
    if (s.compute) compute.push_back(s);
  }
  std::stable_sort(compute.begin(), compute.end(),
                   [](const Span& a, const Span& b) { return a.start < b.start; });
  return compute;
}

std::vector<std::pair<double, double>> memory_curve(const Plan& plan, const Platform& platform,
                                                    const MemoryModel& memory, std::int64_t stage,
                                                    const std::vector<Span>& compute) {
  const StageMemory& sm = memory.stages[static_cast<std::size_t>(stage)];
  const auto steps = compute_steps(stage_program(schedule_config(plan), stage));
  const StepTimes t = step_times(steps, compute);
  const auto device = [&](double allocated) { return device_bytes(platform.memory, allocated); };
  std::vector<std::pair<double, double>> samples;
  add_sample(samples, 0.0, device(sm.base()));  // model state and runtime buffers
  for (std::size_t i = 0; i < steps.size(); ++i) {
    add_sample(samples, t.start[i], device(sm.timeline.during_step[i]));
    add_sample(samples, t.end[i], device(sm.timeline.after_step[i]));
  }
  return samples;
}

}  // namespace trainsim
