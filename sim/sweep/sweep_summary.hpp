#pragma once
// What a sweep found, read back from its CSV lines (so that a resumed or merged sweep summarises
// exactly what its file holds): how many plans were refused and why, the fastest plans, and the
// Pareto front of step time against GPU count.
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
};

/// The entries of CSV row lines (header and malformed lines skipped).
std::vector<SweepEntry> sweep_entries(const std::vector<std::string>& lines);

/// The priced entries not beaten by one on as many GPUs or fewer: for each GPU count, ascending,
/// its plan of most tokens/s if more than every smaller count's.
std::vector<SweepEntry> pareto_front(const std::vector<SweepEntry>& entries);

/// The priced entries, most tokens/s first (the lower index on ties).
std::vector<SweepEntry> ranked(const std::vector<SweepEntry>& entries);

/// The text summary: counts by outcome and the commonest refusals, the `top` plans of most
/// tokens/s, the Pareto front.
std::string sweep_summary(const std::vector<SweepEntry>& entries, std::int64_t top);

}  // namespace trainsim
