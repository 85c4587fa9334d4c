#pragma once
// `trainsim compare`: several plans side by side. Each scenario file named is one column as it
// is; each `--set KEY=VALUE[,KEY=VALUE...]` is a column of the first scenario with those plan
// fields changed. Step time, throughput, MFU, bubble, exposed communication and the fullest
// stage's memory per column, as text or JSON, and with --html one page with the columns' table
// and their pipeline diagrams stacked on one time axis.
#include <iosfwd>
#include <string>
#include <vector>

#include "sim/cli/compare_args.hpp"

namespace trainsim {

int compare_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace trainsim
