#pragma once
// `trainsim validate` on one's own runs: scenario files whose "published" array holds the step
// times (or tokens/s per GPU) and peak allocations a cluster measured, named one by one, as a
// folder of them, or by catalog name.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/validate/validate.hpp"

namespace trainsim {

/// Whether validate's argument `spec` names scenarios (a scenario file, a folder, a catalog
/// scenario) rather than a published reference set. InputError for a file that is neither.
bool names_scenarios(const std::string& spec);

/// The runs `specs` name (each one names_scenarios accepted), read as `trainsim run` reads a
/// scenario, predicted on `platform` or else each on its own: per platform, in the order the
/// platforms first appear, a step-time set and, where a run measured its peak, a memory set. A
/// named scenario without "published" figures is an InputError; in a folder it is a skipped row,
/// and a folder without any JSON file an InputError. `jobs`: replays run at once (SimGrid's each in
/// a process of its own).
std::vector<ValidationSet> validate_scenarios(const std::vector<std::string>& specs,
                                              const std::optional<std::string>& platform,
                                              std::int64_t jobs);

}  // namespace trainsim
