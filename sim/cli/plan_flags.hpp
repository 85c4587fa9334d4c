#pragma once
// The plan's command-line flags (Megatron-LM's names): their help text, and which of them are
// switches that take no value.
#include <boost/program_options/options_description.hpp>
#include <string>

namespace trainsim {

/// Every plan flag, for parsing and for `--help`.
boost::program_options::options_description plan_options();

/// Whether a plan flag is a switch (`--sp`, `--no-overlap-p2p-comm`), not a flag with a value.
bool is_plan_switch(const std::string& name);

}  // namespace trainsim
