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

namespace {

// Per (chunk, micro-batch): not in flight, in flight, or in flight with its input gradient run
// (zero bubble: its activations held until the weight gradient).
enum class State : std::uint8_t { kNone, kLive, kInputGradientDone };

// The bytes a stage holds, step by step, as its program's passes keep and free activations.
class ActivationWalk {
 public:
  ActivationWalk(const std::vector<PassFootprint>& footprints, std::int64_t microbatches,
                 std::size_t steps, double base)
      : footprints_(footprints),
        microbatches_(microbatches),
        state_(footprints.size() * static_cast<std::size_t>(microbatches), State::kNone),
        deferred_(footprints.size(), 0),
        held_(base) {
    t_.peak = base;
    t_.during_step.reserve(steps);
    t_.after_step.reserve(steps);
  }

  void run(const ComputeStep& s, std::int64_t step) {
    if (s.chunk < 0 || static_cast<std::size_t>(s.chunk) >= footprints_.size()) {
      throw std::logic_error("memory walk: chunk " + std::to_string(s.chunk) + " has no footprint");
    }
    if (s.microbatch < 0) throw std::logic_error("memory walk: a pass of no micro-batch");
    const PassFootprint& f = footprints_[static_cast<std::size_t>(s.chunk)];
    State& st = state_[static_cast<std::size_t>(s.chunk * microbatches_ + s.microbatch)];
    if (s.pass == Pass::kForward) {
      forward(f, st, s.microbatch, step);
    } else if (s.pass == Pass::kBackwardWeight) {
      // Zero bubble: the weight gradient frees what the input gradient left for it.
      if (st != State::kInputGradientDone) {
        throw std::logic_error("memory walk: weight gradient of micro-batch " +
                               std::to_string(s.microbatch) + " before its input gradient");
      }
      note_peak(held_ + f.backward_transient, step);
      free(f, st);
    } else {
      backward(f, st, s, step);
    }
    t_.after_step.push_back(held_);
  }

  // What the last step leaves for the flush: the deferred LM-head buffers, held until their
  // weight gradients run after it (nothing otherwise).
  ActivationTimeline finish(std::size_t steps) {
    if (steps > 0) note_peak(held_, static_cast<std::int64_t>(steps) - 1, false);
    return std::move(t_);
  }

 private:
  void forward(const PassFootprint& f, State& st, std::int64_t microbatch, std::int64_t step) {
    if (st != State::kNone) {
      throw std::logic_error("memory walk: micro-batch " + std::to_string(microbatch) +
                             " forwarded twice");
    }
    st = State::kLive;
    ++in_flight_;
    held_ += f.saved;
    note_peak(held_ + f.forward_transient, step);
  }

  void backward(const PassFootprint& f, State& st, const ComputeStep& s, std::int64_t step) {
    if (st != State::kLive) {
      throw std::logic_error("memory walk: backward of micro-batch " +
                             std::to_string(s.microbatch) + " before its forward");
    }
    note_peak(held_ + f.backward_transient, step);
    if (s.pass != Pass::kBackward) {
      st = State::kInputGradientDone;  // activations wait for the weight gradient
      return;
    }
    free(f, st);
    if (deferred_[static_cast<std::size_t>(s.chunk)]++ < f.deferrals) {
      held_ += f.deferred;
      held_deferred_ += f.deferred;
      ++held_deferrals_;
    }
  }

  void free(const PassFootprint& f, State& st) {
    st = State::kNone;
    --in_flight_;
    held_ -= f.saved;
  }

  void note_peak(double bytes, std::int64_t step, bool during_step = true) {
    if (during_step) t_.during_step.push_back(bytes);
    if (bytes <= t_.peak) return;
    t_.peak = bytes;
    t_.peak_step = step;
    t_.peak_in_flight = in_flight_;
    t_.peak_deferred = held_deferred_;
    t_.peak_deferrals = held_deferrals_;
  }

  const std::vector<PassFootprint>& footprints_;
  std::int64_t microbatches_;
  std::vector<State> state_;
  std::vector<std::int64_t> deferred_;  // per chunk, the backwards that kept theirs
  ActivationTimeline t_;
  double held_;
  double held_deferred_ = 0;  // the deferred bytes, part of held_
  std::int64_t held_deferrals_ = 0;
  std::int64_t in_flight_ = 0;
};

}  // namespace

ActivationTimeline walk_activations(const std::vector<ComputeStep>& steps,
                                    const std::vector<PassFootprint>& footprints, double base) {
  std::int64_t microbatches = 0;
  for (const ComputeStep& s : steps) microbatches = std::max(microbatches, s.microbatch + 1);
  ActivationWalk walk(footprints, microbatches, steps.size(), base);
  for (std::size_t i = 0; i < steps.size(); ++i) walk.run(steps[i], static_cast<std::int64_t>(i));
  return walk.finish(steps.size());
}

}  // namespace trainsim
