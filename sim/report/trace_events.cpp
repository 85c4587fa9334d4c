#include "sim/report/trace_events.hpp"

#include <map>

#include "sim/core/format.hpp"
#include "sim/cost/roofline.hpp"

namespace trainsim {

namespace {

const PassCost* pass_cost(const StageCost& sc, ComputeKind kind) {
  switch (kind) {
    case ComputeKind::kForward:
      return &sc.forward;
    case ComputeKind::kBackward:
      return &sc.backward;
    case ComputeKind::kBackwardInput:
      return &sc.backward_input;
    case ComputeKind::kBackwardWeight:
      return &sc.backward_weight;
    case ComputeKind::kRecompute:
      return &sc.recompute;
    case ComputeKind::kOptimizer:
      return &sc.optimizer;
    case ComputeKind::kOther:
    case ComputeKind::kWait:
      break;
  }
  return nullptr;
}

// FLOPs of a pass, and its kernels' launches by where their times come from.
void describe_kernels(const PassCost& pass, nlohmann::ordered_json& args) {
  double flops = 0;
  std::map<std::string, std::int64_t> sources;
  for (const KernelCost& k : pass.kernels) {
    flops += k.flops * static_cast<double>(k.count);
    sources[to_string(k.time.source)] += k.count;
  }
  args["GFLOP"] = flops / 1e9;
  nlohmann::ordered_json by_source = nlohmann::ordered_json::object();
  for (const auto& [source, launches] : sources) by_source[source] = launches;
  args["kernel launches by time source"] = std::move(by_source);
}

}  // namespace

TraceEvent compute_event(const Span& span, std::int64_t stage, const Partition& partition,
                         const CostModel& costs, std::int64_t part, std::int64_t parts,
                         bool first_forward) {
  TraceEvent e;
  e.category = to_string(span.compute_kind);
  e.args["pass"] = to_string(span.compute_kind);
  e.args["ms"] = (span.end - span.start) * 1e3;
  if (span.compute_kind == ComputeKind::kWait) {
    e.category = to_string(span.comm);
    e.name = std::string("wait for ") + to_string(span.comm) +
             (span.microbatch >= 0 ? " mb " + std::to_string(span.microbatch) : "");
    e.args["waits for"] = std::string("the ") + to_string(span.comm) +
                          " calls beside the pass's kernels, where they outlast them: exposed "
                          "communication";
    if (span.microbatch >= 0) e.args["micro-batch"] = span.microbatch;
    e.args["chunk"] = span.chunk;
    return e;
  }
  if (span.compute_kind == ComputeKind::kOptimizer) {
    e.name = "optimizer step";
    for (std::int64_t c = 0; c < partition.chunks; ++c) {
      const auto v = static_cast<std::size_t>(partition.virtual_stage(stage, c));
      describe_kernels(costs.stages[v].optimizer, e.args);
    }
    return e;
  }
  const std::int64_t v = partition.virtual_stage(stage, span.chunk);
  if (span.compute_kind == ComputeKind::kBackwardWeight && span.microbatch < 0) {
    e.name = "W deferred LM head (the pipeline flush)";
    e.args["chunk"] = span.chunk;
    e.args["virtual stage"] = v;
    e.args["note"] = "one micro-batch's kernels below, run once for each deferred micro-batch";
    describe_kernels(costs.stages[static_cast<std::size_t>(v)].lm_head_wgrad, e.args);
    return e;
  }
  const std::string blocks = join(partition.labels(v), ", ");
  e.name = std::string(pass_label(span.compute_kind)) + " mb " + std::to_string(span.microbatch) +
           (partition.chunks > 1 ? " chunk " + std::to_string(span.chunk) : "") + " · " + blocks;
  if (parts > 1) e.name += " (part " + std::to_string(part) + " of " + std::to_string(parts) + ")";
  e.args["micro-batch"] = span.microbatch;
  e.args["chunk"] = span.chunk;
  e.args["virtual stage"] = v;
  e.args["blocks"] = blocks;
  if (parts > 1) {
    e.args["part"] = std::to_string(part) + " of " + std::to_string(parts) +
                     " (the pass waits for each parameter all-gather bucket)";
  }
  const StageCost& sc = costs.stages[static_cast<std::size_t>(v)];
  if (first_forward && !sc.first_forward.kernels.empty()) {
    describe_kernels(sc.first_forward, e.args);
  } else if (const PassCost* pass = pass_cost(sc, span.compute_kind)) {
    describe_kernels(*pass, e.args);
  }
  return e;
}

TraceEvent comm_event(const Span& span, const TaskGraph& graph, std::int32_t rank) {
  TraceEvent e;
  e.category = to_string(span.comm);
  const RankProgram& prog = graph.ranks[static_cast<std::size_t>(rank)];
  const Op& op = prog.ops[span.op];
  const std::string mb = span.microbatch >= 0 ? " mb " + std::to_string(span.microbatch) : "";
  if (span.microbatch >= 0) e.args["micro-batch"] = span.microbatch;
  e.args["ms"] = (span.end - span.start) * 1e3;
  if (op.type == OpType::kP2P && span.transfer >= 0) {
    const auto k = static_cast<std::uint32_t>(span.transfer);
    const Transfer& t = prog.transfers[op.first_transfer + k];
    const bool send = k < op.num_sends;
    const std::string what = t.channel == 0 ? "activations" : "gradients";
    const auto peer_stage = graph.ranks[static_cast<std::size_t>(t.peer)].stage;
    e.name = std::string(send ? "send " : "recv ") + what + mb + (send ? " → " : " ← ") + "stage " +
             std::to_string(peer_stage);
    e.args["direction"] = send ? "send" : "receive";
    e.args["peer GPU"] = graph.gpu_of(t.peer);
    e.args["peer stage"] = peer_stage;
    e.args["tensor"] = what;
    e.args["MB"] = t.bytes / 1e6;
    return e;
  }
  const Group& group = graph.groups[static_cast<std::size_t>(op.group)];
  e.name = std::string(to_string(span.comm)) + " " + to_string(op.collective) + mb;
  e.args["collective"] = to_string(op.collective);
  e.args["group size"] = static_cast<std::int64_t>(group.members.size());
  e.args["calls"] = op.count;
  e.args["MB per GPU"] = op.bytes / 1e6;
  return e;
}

}  // namespace trainsim
