#include "sim/graph/builder.hpp"

#include <cassert>
#include <limits>

#include "sim/plan/placement.hpp"
#include "sim/schedule/schedule.hpp"

namespace trainsim {

const char* to_string(CommKind kind) {
  switch (kind) {
    case CommKind::kTP:
      return "tp";
    case CommKind::kPP:
      return "pp";
    case CommKind::kDP:
      return "dp";
    case CommKind::kCP:
      return "cp";
    case CommKind::kEP:
      return "ep";
  }
  return "?";
}

const char* to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
  }
  return "?";
}

const char* to_string(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::kForward:
      return "forward";
    case ComputeKind::kBackward:
      return "backward";
    case ComputeKind::kOptimizer:
      return "optimizer";
    case ComputeKind::kOther:
      return "other";
  }
  return "?";
}

std::size_t TaskGraph::num_ops() const {
  std::size_t n = 0;
  for (const auto& r : ranks) n += r.ops.size();
  return n;
}

double ring_bytes(CollectiveKind kind, double bytes, std::int64_t members) {
  const double n = static_cast<double>(members);
  const double share = (n - 1.0) / n * bytes;
  return kind == CollectiveKind::kAllReduce ? 2.0 * share : share;
}

std::int64_t ring_steps(CollectiveKind kind, std::int64_t members) {
  return kind == CollectiveKind::kAllReduce ? 2 * (members - 1) : members - 1;
}

namespace {

class RankBuilder {
 public:
  explicit RankBuilder(RankProgram& program) : p_(program) {}

  void compute(ComputeKind kind, std::int32_t mb, double seconds) {
    Op op;
    op.type = OpType::kCompute;
    op.compute = kind;
    op.microbatch = mb;
    op.seconds = seconds;
    p_.ops.push_back(op);
  }

  void collective(CommKind kind, CollectiveKind coll, std::int32_t group, double bytes,
                  std::int64_t count, std::int32_t mb) {
    Op op;
    op.type = OpType::kCollective;
    op.comm = kind;
    op.collective = coll;
    op.group = group;
    op.bytes = bytes;
    op.count = static_cast<std::int32_t>(count);
    op.microbatch = mb;
    p_.ops.push_back(op);
  }

  void p2p(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) {
    Op op;
    op.type = OpType::kP2P;
    op.comm = CommKind::kPP;
    op.first_transfer = static_cast<std::uint32_t>(p_.transfers.size());
    op.num_sends = static_cast<std::uint16_t>(sends.size());
    op.num_recvs = static_cast<std::uint16_t>(recvs.size());
    p_.transfers.insert(p_.transfers.end(), sends.begin(), sends.end());
    p_.transfers.insert(p_.transfers.end(), recvs.begin(), recvs.end());
    p_.ops.push_back(op);
  }

 private:
  RankProgram& p_;
};

std::int32_t as_i32(std::int64_t v) {
  assert(v >= 0 && v <= std::numeric_limits<std::int32_t>::max());
  return static_cast<std::int32_t>(v);
}

}  // namespace

TaskGraph build_task_graph(const Plan& plan, const CostModel& costs) {
  const Placement placement(plan);
  const std::int64_t world = placement.world_size();
  const std::int64_t m = plan.num_microbatches();
  const auto schedule =
      plan.schedule == ScheduleKind::kGPipe ? PipelineSchedule::kGPipe : PipelineSchedule::k1F1B;

  TaskGraph g;
  g.ranks.resize(static_cast<std::size_t>(world));

  // Groups: one TP group per (dp, pp), one DP group per (tp, pp).
  std::vector<std::int32_t> tp_group_of(static_cast<std::size_t>(world), -1);
  std::vector<std::int32_t> dp_group_of(static_cast<std::size_t>(world), -1);
  auto add_group = [&](CommKind kind, const std::vector<std::int64_t>& members,
                       std::vector<std::int32_t>& index) {
    Group grp;
    grp.kind = kind;
    for (auto r : members) {
      grp.members.push_back(as_i32(r));
      index[static_cast<std::size_t>(r)] = as_i32(static_cast<std::int64_t>(g.groups.size()));
    }
    g.groups.push_back(std::move(grp));
  };
  for (std::int64_t pp = 0; pp < plan.pp; ++pp) {
    if (plan.tp > 1) {
      for (std::int64_t d = 0; d < plan.dp; ++d) {
        add_group(CommKind::kTP, placement.tp_group(d, pp), tp_group_of);
      }
    }
    if (plan.dp > 1) {
      for (std::int64_t t = 0; t < plan.tp; ++t) {
        add_group(CommKind::kDP, placement.dp_group(t, pp), dp_group_of);
      }
    }
  }

  for (std::int64_t rank = 0; rank < world; ++rank) {
    const RankCoord c = placement.coord(rank);
    const auto& cost = costs.stages[static_cast<std::size_t>(c.pp)];
    RankProgram& prog = g.ranks[static_cast<std::size_t>(rank)];
    prog.stage = as_i32(c.pp);
    RankBuilder b(prog);
    const std::int32_t tp_group = tp_group_of[static_cast<std::size_t>(rank)];
    auto neighbour = [&](Flow flow, bool sending) {
      // Activations go to the next stage and come from the previous; gradients the reverse.
      const bool forward = (flow == Flow::kActivation) == sending;
      return as_i32(placement.rank({c.tp, c.dp, c.pp + (forward ? 1 : -1)}));
    };
    // A message crossing the boundary between stages b and b + 1 is stage b's output (or its
    // gradient), whichever way it travels.
    auto transfers = [&](const std::vector<Exchange>& ex, bool sending) {
      std::vector<Transfer> out;
      for (const auto& e : ex) {
        const bool towards_next = (e.flow == Flow::kActivation) == sending;
        const auto boundary = static_cast<std::size_t>(towards_next ? c.pp : c.pp - 1);
        out.push_back({neighbour(e.flow, sending), e.flow == Flow::kActivation ? 0 : 1,
                       costs.stages[boundary].p2p_bytes});
      }
      return out;
    };

    for (const auto& step : stage_program(schedule, c.pp, plan.pp, m)) {
      if (step.kind == ScheduleStep::Kind::kComm) {
        b.p2p(transfers(step.sends, true), transfers(step.recvs, false));
        continue;
      }
      const bool fwd = step.pass == Pass::kForward;
      const auto& pass = fwd ? cost.forward : cost.backward;
      const auto mb = as_i32(step.microbatch);
      b.compute(fwd ? ComputeKind::kForward : ComputeKind::kBackward, mb, pass.seconds);
      if (tp_group >= 0 && pass.tp_allreduce.count > 0) {
        b.collective(CommKind::kTP, CollectiveKind::kAllReduce, tp_group, pass.tp_allreduce.bytes,
                     pass.tp_allreduce.count, mb);
      }
    }
    const std::int32_t dp_group = dp_group_of[static_cast<std::size_t>(rank)];
    if (dp_group >= 0) {
      b.collective(CommKind::kDP, CollectiveKind::kAllReduce, dp_group, cost.grad_bytes, 1, -1);
    }
    b.compute(ComputeKind::kOptimizer, -1, cost.optimizer.seconds);
  }
  return g;
}

}  // namespace trainsim
