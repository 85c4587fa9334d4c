#include "sim/memory/timeline.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace trainsim {

std::vector<ComputeStep> compute_steps(const std::vector<ScheduleStep>& program) {
  std::vector<ComputeStep> steps;
  for (const auto& s : program) {
    if (s.kind == ScheduleStep::Kind::kCompute) steps.push_back({s.pass, s.microbatch, s.chunk});
  }
  return steps;
}

ActivationTimeline walk_activations(const std::vector<ComputeStep>& steps,
                                    const std::vector<PassFootprint>& footprints, double base) {
  ActivationTimeline t;
  t.peak = base;
  double held = base;
  // Per (chunk, micro-batch): not in flight, in flight, or in flight with its input gradient run
  // (zero bubble: its activations held until the weight gradient).
  enum class State : std::uint8_t { kNone, kLive, kInputGradientDone };
  std::int64_t microbatches = 0;
  for (const ComputeStep& s : steps) microbatches = std::max(microbatches, s.microbatch + 1);
  std::vector<State> state(footprints.size() * static_cast<std::size_t>(microbatches),
                           State::kNone);
  std::int64_t in_flight = 0;
  std::vector<std::int64_t> deferred(footprints.size(), 0);  // backwards that kept theirs
  double held_deferred = 0;                                  // their bytes, part of `held`
  std::int64_t held_deferrals = 0;
  t.during_step.reserve(steps.size());
  t.after_step.reserve(steps.size());
  auto note_peak = [&](double bytes, std::int64_t step) {
    t.during_step.push_back(bytes);
    if (bytes > t.peak) {
      t.peak = bytes;
      t.peak_step = step;
      t.peak_in_flight = in_flight;
      t.peak_deferred = held_deferred;
      t.peak_deferrals = held_deferrals;
    }
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const ComputeStep& s = steps[i];
    if (s.chunk < 0 || static_cast<std::size_t>(s.chunk) >= footprints.size()) {
      throw std::logic_error("memory walk: chunk " + std::to_string(s.chunk) + " has no footprint");
    }
    const PassFootprint& f = footprints[static_cast<std::size_t>(s.chunk)];
    if (s.microbatch < 0) throw std::logic_error("memory walk: a pass of no micro-batch");
    State& st = state[static_cast<std::size_t>(s.chunk * microbatches + s.microbatch)];
    const auto step = static_cast<std::int64_t>(i);
    if (s.pass == Pass::kForward) {
      if (st != State::kNone) {
        throw std::logic_error("memory walk: micro-batch " + std::to_string(s.microbatch) +
                               " forwarded twice");
      }
      st = State::kLive;
      ++in_flight;
      held += f.saved;
      note_peak(held + f.forward_transient, step);
    } else if (s.pass == Pass::kBackwardWeight) {
      // Zero bubble: the weight gradient frees what the input gradient left for it.
      if (st != State::kInputGradientDone) {
        throw std::logic_error("memory walk: weight gradient of micro-batch " +
                               std::to_string(s.microbatch) + " before its input gradient");
      }
      note_peak(held + f.backward_transient, step);
      st = State::kNone;
      --in_flight;
      held -= f.saved;
    } else {
      if (st != State::kLive) {
        throw std::logic_error("memory walk: backward of micro-batch " +
                               std::to_string(s.microbatch) + " before its forward");
      }
      note_peak(held + f.backward_transient, step);
      if (s.pass == Pass::kBackward) {
        st = State::kNone;
        --in_flight;
        held -= f.saved;
        if (deferred[static_cast<std::size_t>(s.chunk)]++ < f.deferrals) {
          held += f.deferred;
          held_deferred += f.deferred;
          ++held_deferrals;
        }
      } else {
        st = State::kInputGradientDone;  // activations wait for the weight gradient
      }
    }
    t.after_step.push_back(held);
  }
  // What the last step leaves for the flush: the deferred LM-head buffers, held until their
  // weight gradients run after it (nothing otherwise).
  if (!steps.empty() && held > t.peak) {
    t.peak = held;
    t.peak_step = static_cast<std::int64_t>(steps.size()) - 1;
    t.peak_in_flight = in_flight;
    t.peak_deferred = held_deferred;
    t.peak_deferrals = held_deferrals;
  }
  return t;
}

}  // namespace trainsim
