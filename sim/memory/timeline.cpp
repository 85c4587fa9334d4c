#include "sim/memory/timeline.hpp"

#include <map>
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
  // (chunk, micro-batch) -> its input gradient has run (zero bubble: held until the weight's)
  std::map<std::pair<std::int64_t, std::int64_t>, bool> live;
  auto note_peak = [&](double bytes, std::int64_t step) {
    t.during_step.push_back(bytes);
    if (bytes > t.peak) {
      t.peak = bytes;
      t.peak_step = step;
      t.peak_in_flight = static_cast<std::int64_t>(live.size());
    }
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const ComputeStep& s = steps[i];
    if (s.chunk < 0 || static_cast<std::size_t>(s.chunk) >= footprints.size()) {
      throw std::logic_error("memory walk: chunk " + std::to_string(s.chunk) + " has no footprint");
    }
    const PassFootprint& f = footprints[static_cast<std::size_t>(s.chunk)];
    const auto key = std::make_pair(s.chunk, s.microbatch);
    const auto step = static_cast<std::int64_t>(i);
    if (s.pass == Pass::kForward) {
      if (!live.emplace(key, false).second) {
        throw std::logic_error("memory walk: micro-batch " + std::to_string(s.microbatch) +
                               " forwarded twice");
      }
      held += f.saved;
      note_peak(held + f.forward_transient, step);
    } else if (s.pass == Pass::kBackwardWeight) {
      // Zero bubble: the weight gradient frees what the input gradient left for it.
      auto it = live.find(key);
      if (it == live.end() || !it->second) {
        throw std::logic_error("memory walk: weight gradient of micro-batch " +
                               std::to_string(s.microbatch) + " before its input gradient");
      }
      note_peak(held + f.backward_transient, step);
      live.erase(it);
      held -= f.saved;
    } else {
      auto it = live.find(key);
      if (it == live.end() || it->second) {
        throw std::logic_error("memory walk: backward of micro-batch " +
                               std::to_string(s.microbatch) + " before its forward");
      }
      note_peak(held + f.backward_transient, step);
      if (s.pass == Pass::kBackward) {
        live.erase(it);
        held -= f.saved;
      } else {
        it->second = true;  // input gradient done; the activations wait for the weight gradient
      }
    }
    t.after_step.push_back(held);
  }
  return t;
}

}  // namespace trainsim
