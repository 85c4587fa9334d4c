#pragma once
// `trainsim sweep`: every plan of a sweep file judged and priced, in worker processes, each row
// appended whole to FILE.csv.part as it comes (so that a killed sweep resumes where it stopped),
// then FILE.csv written in plan order with the summary printed; shards of a batch array, and
// their merge into the unsharded run's bytes.
#include <iosfwd>
#include <string>
#include <vector>

namespace trainsim {

int sweep_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
std::string sweep_help();

}  // namespace trainsim
