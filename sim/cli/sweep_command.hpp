#pragma once
// `trainsim sweep`: every plan of a sweep file judged and priced, in worker processes, each row
// appended whole to FILE.csv.part as it comes (so that a killed sweep resumes where it stopped),
// then FILE.csv written in plan order with the summary printed; shards of a batch array, and
// their merge into the unsharded run's bytes.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "sim/report/time_to_train.hpp"

namespace trainsim {

/// What `trainsim sweep`'s arguments ask for.
struct SweepOptions {
  std::optional<std::string> file;
  std::optional<std::string> out;
  std::int64_t jobs = 1;
  std::int64_t shard = 0;   // 0-based
  std::int64_t shards = 1;  // --shard K/N: K in 1..N
  TrainingBudget budget;    // --tokens, --price-per-gpu-hour
  std::optional<std::int64_t> top;
  std::optional<double> deadline_days;
  std::optional<std::string> svg;  // the time-against-cost chart
  std::int64_t simgrid_top = 3;    // the best plans replayed on SimGrid
  std::vector<std::string> merge;  // --merge: shard files
  /// --platform NAME[=PRICE],...: the platforms in place of the file's (sweep_platform_flag.hpp).
  std::optional<std::string> platforms;
  bool help = false;
};

/// Parses the arguments of `sweep` (after the command word) and checks what they must hold
/// together; InputError naming the flag.
SweepOptions parse_sweep_options(const std::vector<std::string>& args);

int sweep_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
std::string sweep_help();

}  // namespace trainsim
