#pragma once
// A scenario's published figures beside the prediction, as the text and HTML reports print them.
#include <string>
#include <vector>

#include "sim/report/report.hpp"

namespace trainsim {

/// One line per compared figure: a step time (or throughput) with trainsim's signed error and
/// whether the calibration's band holds it; a peak allocation against the stage that allocates
/// most. One line with the reason where flags changed the recipe; none without figures.
std::vector<std::string> published_lines(const Report& r);

}  // namespace trainsim
