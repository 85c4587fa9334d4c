// Batch problems: a global batch that mbs x dp does not divide (Megatron-LM refuses it), and fewer
// micro-batches than pipeline stages (every stage idles most of the step).
#include "sim/check/detect.hpp"
#include "sim/check/wording.hpp"

namespace trainsim {

namespace {

std::optional<Finding> gbs_not_divisible(const Plan& plan) {
  const std::int64_t per_step = plan.mbs * plan.dp;
  const std::int64_t gbs = plan.global_batch();
  const std::int64_t m = plan.num_microbatches();
  if (gbs % per_step == 0) return std::nullopt;
  const std::string mbs = std::to_string(plan.mbs);
  const std::string dp = std::to_string(plan.dp);
  Diagnostic d;
  d.id = "gbs-not-divisible";
  d.severity = Severity::kError;
  d.message = "global batch " + std::to_string(gbs) + " is not a multiple of mbs x dp = " + mbs +
              " x " + dp + " = " + std::to_string(per_step) +
              "; Megatron-LM refuses it (\"global batch size (" + std::to_string(gbs) +
              ") is not divisible by micro batch size (" + mbs + ") times data parallel size (" +
              dp + ")\"). Simulated here with " + std::to_string(m) + " micro-batches (" +
              std::to_string(m * per_step) + " sequences per step)";
  return Finding{std::move(d), DivisibleBatch{{m * per_step, (m + 1) * per_step}}};
}

std::optional<Finding> microbatches_fewer_than_stages(const Plan& plan) {
  const std::int64_t m = plan.num_microbatches();
  const std::int64_t p = plan.pp;
  if (p <= 1 || m >= p) return std::nullopt;
  Diagnostic d;
  d.id = "microbatches-fewer-than-stages";
  d.severity = Severity::kWarning;
  d.message = std::to_string(m) + (m == 1 ? " micro-batch" : " micro-batches") + " per step for " +
              std::to_string(p) + " pipeline stages: every stage idles at least " +
              std::to_string(p - 1) + " of every " + std::to_string(m + p - 1) +
              " pass slots (1F1B bubble (p-1)/(m+p-1) = " +
              percent(static_cast<double>(p - 1) / static_cast<double>(m + p - 1)) + ")";
  return Finding{std::move(d), FullPipelineBatch{p * plan.mbs * plan.dp}};
}

}  // namespace

std::vector<Finding> find_batch_problems(const CheckContext& context) {
  std::vector<Finding> out;
  if (auto f = gbs_not_divisible(context.plan)) out.push_back(std::move(*f));
  if (auto f = microbatches_fewer_than_stages(context.plan)) out.push_back(std::move(*f));
  return out;
}

}  // namespace trainsim
