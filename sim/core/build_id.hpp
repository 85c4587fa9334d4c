#pragma once
// Which build of trainsim is running: the GNU build-id note the linker writes into the program (a
// hash of its contents), so that work saved by one build is not taken up by another.
#include <string>

namespace trainsim {

/// The running program's GNU build id in hex; empty where the program has none.
const std::string& build_id();

}  // namespace trainsim
