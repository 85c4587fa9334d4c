#include "sim/evaluate/evaluate.hpp"

#include <algorithm>
#include <map>

#include "sim/collective/group_collectives.hpp"
#include "sim/core/error.hpp"
#include "sim/cost/pass_groups.hpp"
#include "sim/evaluate/steady_replay.hpp"
#include "sim/graph/builder.hpp"
#include "sim/graph/symmetry.hpp"
#include "sim/model/params.hpp"
#include "sim/plan/vocab.hpp"

namespace trainsim {

namespace {

// Each DeepSpeed layer's parameter count on one TP rank (what _count_layer_params sees).
std::vector<std::int64_t> deepspeed_layer_params(const Model& model, const Plan& plan) {
  const ParamCount pc = count_params(model);
  const std::int64_t rows =
      padded_vocab(model.vocab_size, plan.vocab_multiple(), plan.tp) / plan.tp;
  const std::int64_t sharded = pc.layer() - pc.layer_norms;
  std::vector<std::int64_t> out;
  for (const auto& b : model_blocks(model)) {
    switch (b.kind) {
      case BlockKind::kEmbedding:
        out.push_back(rows * model.hidden_size + pc.position_embedding);
        break;
      case BlockKind::kDecoder:
        out.push_back(sharded / plan.tp + pc.layer_norms);
        break;
      case BlockKind::kFinalNorm:
        out.push_back(pc.final_norm);
        break;
      case BlockKind::kLmHead:
        out.push_back(rows * model.hidden_size);
        break;
      case BlockKind::kMtp:  // DeepSpeed builds none (validate_plan)
      case BlockKind::kCast:
      case BlockKind::kLoss:
        break;
    }
  }
  return out;
}

}  // namespace

namespace {

// Compute plus the TP and CP collectives of a forward and a backward pass, priced on the first
// group of each as placed (those beside the compute count only by the stalls in its time).
class PassTimer {
 public:
  PassTimer(const Platform& platform, const Plan& plan) : groups_(platform, plan) {}
  double seconds(const PassCost& forward, const PassCost& backward) const {
    double t = forward.seconds + backward.seconds;
    for (const PassCost* pass : {&forward, &backward}) {
      for (const auto& c : pass->collectives) {
        if (groups_.has(c.dim) && c.count > 0 && !c.alongside) {
          t += groups_.choose(c.dim, c.kind, c.bytes, c.count).seconds;
        }
      }
    }
    return t;
  }

 private:
  PassGroups groups_;
};

}  // namespace

std::vector<double> block_times(const Model& model, const Platform& platform, const Plan& plan,
                                const std::vector<Block>& blocks) {
  const PassTimer timer(platform, plan);
  // A block's time depends on its kind alone: each kind is costed once.
  std::map<BlockKind, double> by_kind;
  std::vector<double> times;
  for (const auto& b : blocks) {
    auto it = by_kind.find(b.kind);
    if (it == by_kind.end()) {
      const BlockCost c = block_cost(model, platform, plan, b.kind);
      it = by_kind.emplace(b.kind, timer.seconds(c.forward, c.backward)).first;
    }
    times.push_back(it->second);
  }
  return times;
}

std::vector<double> stage_times(const Platform& platform, const Plan& plan,
                                const CostModel& costs) {
  const PassTimer timer(platform, plan);
  std::vector<double> times;
  for (const auto& s : costs.stages) times.push_back(timer.seconds(s.forward, s.backward));
  return times;
}

Partition balanced_partition(const Model& model, const Platform& platform, const Plan& plan) {
  std::vector<Block> blocks = model_blocks(model);
  const auto times = block_times(model, platform, plan, blocks);
  // With interleaving the parts are the pp x vp virtual stages: every chunk runs once per
  // micro-batch, so the slowest chunk sets the pace as the slowest stage does without it.
  const auto bounds = min_max_bounds(blocks, times, plan.pp * plan.vp);
  return partition_from_bounds("balanced", std::move(blocks), bounds, plan.vp);
}

Partition build_partition(const Model& model, const Platform& platform, const Plan& plan,
                          const PlanOrigin& origin) {
  const PartitionSpec spec = parse_partition_spec(plan.partition, origin.of("partition"));
  const std::int64_t vocab = padded_vocab(model.vocab_size, plan.vocab_multiple(), plan.tp);
  switch (spec.rule) {
    case PartitionRule::kUniform:
      return megatron_uniform_partition(model, plan, origin);
    case PartitionRule::kLayout:
      return megatron_layout_partition(model, spec.argument, plan.pp, plan.vp,
                                       origin.of("partition"));
    case PartitionRule::kNanotron:
      if (plan.vp > 1)
        fail_input(origin.of("partition"), "nanotron has no interleaved schedule (--vp)");
      return nanotron_partition(model, plan.pp, vocab);
    case PartitionRule::kDeepSpeedUniform:
    case PartitionRule::kDeepSpeedParameters:
    case PartitionRule::kDeepSpeedType:
      if (plan.vp > 1) {
        fail_input(origin.of("partition"),
                   "DeepSpeed's pipeline engine has no interleaved schedule (--vp)");
      }
      return deepspeed_partition(model, spec, plan.pp, deepspeed_layer_params(model, plan));
    case PartitionRule::kBalanced:
      return balanced_partition(model, platform, plan);
  }
  return megatron_uniform_partition(model, plan, origin);
}

SimResult replay_with(const Platform& platform, const Plan& plan, const CostModel& costs,
                      EngineKind engine, EngineOptions options) {
  const Topology topology(platform, plan.world_size());
  const ReplayChoice choice =
      choose_replay(plan, costs, topology, engine == EngineKind::kSimGrid, false);
  const TaskGraph graph = build_task_graph(plan, costs, choice.replay, choice.chains);
  options.compute_slowdown = platform.overlap.compute_slowdown;
  return simulate(graph, topology, engine, options);
}

namespace {

SimResult replay_plan(const Platform& platform, const Plan& plan, const CostModel& costs,
                      EngineKind engine, CollectiveShapes* shapes, bool step_only,
                      const std::optional<SteadyWindow>& steady) {
  EngineOptions options;
  options.shapes = shapes;
  options.step_only = step_only;
  options.steady = steady;
  return replay_with(platform, plan, costs, engine, options);
}

}  // namespace

SimResult replay(const Platform& platform, const Plan& plan, const CostModel& costs,
                 EngineKind engine, CollectiveShapes* shapes, bool step_only) {
  // A step time alone, on the analytic engine: from a shorter step where its steady state
  // repeats (sim/evaluate/steady_replay.hpp). Costs do not depend on the micro-batch count.
  if (step_only && engine == EngineKind::kAnalytic) {
    if (const auto steady = steady_replay(plan)) {
      SimResult r =
          replay_plan(platform, steady->shorter, costs, engine, shapes, true, steady->window);
      if (r.steady_shift) {
        r.step_time_s += static_cast<double>(steady->periods_added) * *r.steady_shift;
        return r;
      }
    }
  }
  return replay_plan(platform, plan, costs, engine, shapes, step_only, std::nullopt);
}

Evaluation evaluate(const Model& model, const Platform& platform, const Plan& plan,
                    Partition partition, EngineKind engine, CollectiveShapes* shapes) {
  Evaluation e;
  e.partition = std::move(partition);
  e.costs = compute_costs(model, platform, plan, e.partition);
  e.sim = replay(platform, plan, e.costs, engine, shapes);
  return e;
}

}  // namespace trainsim
