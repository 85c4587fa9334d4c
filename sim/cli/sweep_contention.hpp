#pragma once
// A sweep prices its plans on the analytic engine, without contention; its best plans are worth
// a replay on SimGrid, where flows share links. Each in a forked process, since SimGrid runs one
// simulation per process.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/cli/sweep_workers.hpp"
#include "sim/sweep/sweep_summary.hpp"

namespace trainsim {

/// The first `n` of `ranked` replayed on SimGrid: a table of each one's analytic and SimGrid step
/// times and their difference.
std::string simgrid_replays(const SweepContext& c, const std::vector<SweepEntry>& ranked,
                            std::int64_t n);

}  // namespace trainsim
