#include "sim/check/checks.hpp"

#include "sim/core/format.hpp"

namespace trainsim {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
  }
  return "?";
}

std::vector<Diagnostic> check_plan(const Model& /*model*/, const Platform& platform,
                                   const Plan& plan, const Partition& partition,
                                   const CostModel& /*costs*/) {
  std::vector<Diagnostic> out;
  const auto m = plan.num_microbatches();
  const auto p = partition.num_stages();
  if (p > 1 && m < p) {
    Diagnostic d;
    d.id = "microbatches-fewer-than-stages";
    d.severity = Severity::kWarning;
    d.message =
        std::to_string(m) + " micro-batches per step for " + std::to_string(p) +
        " pipeline stages: every stage idles at least " + std::to_string(p - 1) + " of every " +
        std::to_string(m + p - 1) + " pass slots (1F1B bubble (p-1)/(m+p-1) = " +
        format_fixed(100.0 * static_cast<double>(p - 1) / static_cast<double>(m + p - 1), 1) +
        " %)";
    d.fix = "raise --gbs to at least " + std::to_string(p * plan.mbs * plan.dp) +
            " (m >= p) or lower --pp";
    out.push_back(std::move(d));
  }
  if (plan.tp > platform.node.gpus_per_node) {
    Diagnostic d;
    d.id = "tp-across-nodes";
    d.severity = Severity::kWarning;
    d.message = "tensor parallelism of " + std::to_string(plan.tp) + " spans nodes of " +
                std::to_string(platform.node.gpus_per_node) +
                " GPUs: its all-reduces leave NVLink for the network";
    d.fix = "keep --tp at most " + std::to_string(platform.node.gpus_per_node) +
            " and move the rest into --pp or --dp";
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace trainsim
