#include "tests/support/after_step_all_reduce.hpp"

#include "sim/collective/group_collectives.hpp"
#include "tests/support/support.hpp"

namespace trainsim::test {

AfterStepAllReduce::AfterStepAllReduce(Plan p, double StageCost::*bytes)
    : plan(p), costs(uniform_costs(1, 1e-3, 2e-3)), topo(simple_platform(450, 0, 50, 0), 8) {
  plan.gbs = 4;
  plan.seq_len = 1;
  costs.stages[0].*bytes = kBytes;
}

double AfterStepAllReduce::all_reduce() const {
  const Members stage{0, 1, 2, 3, 4, 5, 6, 7};
  return GroupCollectives(topo, stage).choose(CollectiveKind::kAllReduce, kBytes, 1).seconds;
}

double AfterStepAllReduce::step(EngineKind engine, Replay replay) const {
  return simulate(build_task_graph(plan, costs, replay), topo, engine).step_time_s;
}

}  // namespace trainsim::test
