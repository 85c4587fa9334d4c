#pragma once
// sweep's --platform NAME[=PRICE],...: the platforms to price a sweep's plans on, in place of the
// file's "platform", each at its own price where the flag gives one, so that one sweep file
// compares GPU types and prices without being edited.
#include <string>
#include <vector>

#include "sim/cli/sweep_spec.hpp"

namespace trainsim {

/// The platforms `text` names (catalog names or paths, comma-separated, each optionally
/// "=PRICE" per GPU-hour: every one or none). Without prices, a platform keeps the price the
/// file's per-platform "price_per_gpu_hour" gives it. InputError naming --platform for an empty
/// or repeated name, a price that is no positive number, prices on some names only, prices beside
/// --price-per-gpu-hour (`price_flag`), or a platform the file's prices miss (unless
/// --price-per-gpu-hour sets one for all).
std::vector<SweepPlatform> flag_platforms(const std::string& text, const SweepSpec& spec,
                                          bool price_flag);

}  // namespace trainsim
