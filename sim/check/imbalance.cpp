// Stage imbalance: the pipeline runs at its slowest stage's pace. Whether a better partition
// exists, and what the imbalance costs, takes pricing the balanced partition: the finding asks for
// it (BalancedPartition) and the search completes or withdraws it.
#include <algorithm>
#include <numeric>

#include "sim/check/detect.hpp"
#include "sim/check/wording.hpp"
#include "sim/core/format.hpp"

namespace trainsim {

std::vector<Finding> find_imbalance(const CheckContext& context) {
  const Partition& partition = context.partition;
  if (partition.num_stages() < 2 || partition.method == "balanced") return {};
  for (std::int64_t s = 0; s < partition.num_stages(); ++s) {
    if (partition.num_blocks(s) == 0) return {};  // empty stages are reported as such
  }
  const std::vector<double>& times = context.stage_times;
  const double mean =
      std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
  const auto slowest = std::max_element(times.begin(), times.end());
  const double excess = *slowest / mean - 1.0;
  if (excess <= context.options.imbalance_threshold) return {};
  Diagnostic d;
  d.id = "stage-imbalance";
  d.severity = Severity::kWarning;
  d.stage = slowest - times.begin();
  d.message = stage_name(partition, *d.stage) + " takes " + format_seconds(*slowest) +
              " per micro-batch (forward and backward), " + percent(excess) +
              " above the mean stage (" + format_seconds(mean) + ")";
  const bool lm_head = partition.holds(*d.stage, BlockKind::kLmHead);
  return {{std::move(d), BalancedPartition{lm_head}}};
}

}  // namespace trainsim
