#pragma once
// The plan's command-line flags (Megatron-LM's names) and their help text; a switch
// (`--sp`, `--no-overlap-p2p-comm`) is one whose value takes no tokens.
#include <boost/program_options/options_description.hpp>

namespace trainsim {

/// Every plan flag, for parsing and for `--help`.
boost::program_options::options_description plan_options();

}  // namespace trainsim
