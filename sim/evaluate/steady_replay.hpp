#pragma once
// A long step priced from a short one. The replay of a plan with many micro-batches spends most
// of its ops in the pipeline's steady state, where each micro-batch (each group of them,
// interleaved) repeats the one before a fixed time later. A search replays the same plan with
// just enough micro-batches for a warm-up, a window of steady periods it checks for that
// repetition (sim/engine/steady_state.hpp), and a cool-down, and adds the missing periods' time
// (replay() in sim/evaluate/evaluate.hpp, for a step time alone); where the window does not
// repeat it replays the whole step.
#include <optional>

#include "sim/engine/engine.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// The shortened plan and the window its replay checks, or nullopt where the plan's step is too
/// short to gain from it or its schedule (GPipe) has no single steady state.
struct SteadyReplay {
  Plan shorter;
  SteadyWindow window;
  std::int64_t periods_added = 0;  // periods the full step has beyond the shorter one's
};
std::optional<SteadyReplay> steady_replay(const Plan& plan);

}  // namespace trainsim
