#pragma once
// "Did you mean ...?" for a mistyped key, flag or name: the one known name a typo most likely
// meant, or none where no name is close or two are equally close (a guess then misleads).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim {

/// Edits (insert, delete, replace, swap two neighbours) from `a` to `b`: the optimal string
/// alignment distance, case-sensitive.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The name in `known` nearest to `typed`: within two edits and fewer than half of its length,
/// the only one at that distance; else the only name `typed` begins (at least four characters);
/// else none.
std::optional<std::string> nearest_name(std::string_view typed,
                                        const std::vector<std::string>& known);

/// "; did you mean NAME?" for nearest_name, "" where there is none: what an "unknown" message
/// appends.
std::string did_you_mean(std::string_view typed, const std::vector<std::string>& known);

}  // namespace trainsim
