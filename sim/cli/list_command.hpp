#pragma once
// `trainsim list`: the catalog. Every model with its parameter counts, every platform with its
// GPU, and every scenario (and those on the scenario folder's shelves, run by name too) with its
// model, platform, GPU count and layout.
#include <iosfwd>
#include <string>
#include <vector>

namespace trainsim {

int list_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace trainsim
