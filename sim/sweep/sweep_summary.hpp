#pragma once
// What a sweep found, read back from its CSV lines (so that a resumed or merged sweep summarises
// exactly what its file holds): how many plans were refused and why, the fastest plans, and the
// Pareto front of step time against GPU count. With a failure model (a GPU MTBF), "fastest" is
// the throughput failures leave: tokens/s x (1 - the share of the days they take), the order of
// the days with failures, so that a plan on more GPUs, which fails more often, ranks as it would
// finish.
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim {

/// One priced or refused plan as the summary reads it from its CSV line.
struct SweepEntry {
  std::int64_t index = 0;
  std::int64_t gpus = 0;
  std::string status;
  std::string reason;
  std::string plan;  // "tp 4 pp 2 vp 5 dp 8 mbs 1 interleaved ..."
  double step_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  std::string peak_gib;
  std::string days;
  std::string cost;
  std::string days_with_failures;  // blank without a GPU MTBF, "inf" for a job that never ends
  double lost_to_failures = 0;     // the share of the days failures take (1: never ends)

  /// Tokens/s less what failures take: tokens/s x (1 - lost_to_failures).
  double goodput() const { return tokens_per_s * (1 - lost_to_failures); }
};

/// The entries of CSV row lines (header and malformed lines skipped).
std::vector<SweepEntry> sweep_entries(const std::vector<std::string>& lines);

/// The priced entries not beaten by one on as many GPUs or fewer: for each GPU count, ascending,
/// its plan of most goodput() if more than every smaller count's.
std::vector<SweepEntry> pareto_front(const std::vector<SweepEntry>& entries);

/// The priced entries, most goodput() first (the lower index on ties).
std::vector<SweepEntry> ranked(const std::vector<SweepEntry>& entries);

/// The text summary: counts by outcome and the commonest refusals, the `top` plans of most
/// goodput(), the Pareto front; with failures, the days column gives the days with failures and a
/// column the share lost.
std::string sweep_summary(const std::vector<SweepEntry>& entries, std::int64_t top);

}  // namespace trainsim
