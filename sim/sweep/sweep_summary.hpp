#pragma once
// What a sweep found, read back from its CSV lines (so that a resumed or merged sweep summarises
// exactly what its file holds): how many plans were refused and why, the fastest plans, and the
// Pareto front of step time against GPU count. With a failure model (a GPU MTBF), "fastest" is
// the throughput failures leave: tokens/s x (1 - the share of the days they take), the order of
// the days with failures, so that a plan on more GPUs, which fails more often, ranks as it would
// finish.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainsim {

/// One priced or refused plan as the summary reads it from its CSV line.
struct SweepEntry {
  std::int64_t index = 0;
  std::string platform;
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
  std::string gpu_hours;                // blank without a token budget
  std::string days_with_failures;       // blank without a GPU MTBF, "inf" for a job that never ends
  double lost_to_failures = 0;          // the share of the days failures take (1: never ends)
  std::string gpu_hours_with_failures;  // as days_with_failures
  std::string cost_with_failures;       // as days_with_failures, blank without a price

  /// Tokens/s less what failures take: tokens/s x (1 - lost_to_failures).
  double goodput() const { return tokens_per_s * (1 - lost_to_failures); }
  /// Whether it has days (a token budget) and, with failures, ever finishes.
  bool finishes() const { return !days.empty() && days_with_failures != "inf"; }
  /// The days and GPU-hours it takes: with failures where given, else training alone.
  double days_spent() const {
    return std::stod(days_with_failures.empty() ? days : days_with_failures);
  }
  double gpu_hours_spent() const {
    return std::stod(gpu_hours_with_failures.empty() ? gpu_hours : gpu_hours_with_failures);
  }
  /// The cost it takes, as gpu_hours_spent(); none without a price.
  std::optional<double> cost_spent() const {
    const std::string& c = days_with_failures.empty() ? cost : cost_with_failures;
    return c.empty() ? std::nullopt : std::optional<double>(std::stod(c));
  }
};

/// Whether plans are compared by their cost rather than their GPU-hours: the priced plans that
/// finish span several platforms, each with a price (a GPU-hour costs what its platform's does).
bool ranked_by_cost(const std::vector<SweepEntry>& entries);

/// The entries of CSV row lines (header and malformed lines skipped). Where they span several
/// platforms, each plan's label starts with its platform ("h200-sxm-ndr: tp 8 ...").
std::vector<SweepEntry> sweep_entries(const std::vector<std::string>& lines);

/// The priced entries not beaten by one on as many GPUs or fewer: for each GPU count, ascending,
/// its plan of most goodput() if more than every smaller count's.
std::vector<SweepEntry> pareto_front(const std::vector<SweepEntry>& entries);

/// The priced entries, most goodput() first (the lower index on ties).
std::vector<SweepEntry> ranked(const std::vector<SweepEntry>& entries);

/// The priced entries that finish within `deadline_days` (days_spent()), fewest GPU-hours spent
/// first (then fewer days, then the lower index): the cheapest way to meet a deadline. Where they
/// span several platforms and each has a price, the lowest cost first: a GPU-hour costs what its
/// platform's does.
std::vector<SweepEntry> cheapest_within(const std::vector<SweepEntry>& entries,
                                        double deadline_days);

/// The text summary: counts by outcome and the commonest refusals, the `top` plans of most
/// goodput(), the Pareto front and, with a deadline, the `top` cheapest_within it; with failures,
/// the days column gives the days with failures and a column the share lost.
std::string sweep_summary(const std::vector<SweepEntry>& entries, std::int64_t top,
                          std::optional<double> deadline_days = std::nullopt);

}  // namespace trainsim
