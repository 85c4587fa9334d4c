#pragma once
// The report as one self-contained HTML page (inline CSS and SVG, no script, no font, nothing
// fetched): the summary with the uncertainty band, the step-time breakdown as a bar (compute,
// exposed communication by kind, bubble and other waits), the pipeline diagram, the per-stage
// table, each stage's memory over the step (the curve, its peak, and what holds the peak) and the
// diagnostics with their priced fixes.
#include <string>
#include <utility>
#include <vector>

#include "sim/report/report.hpp"

namespace trainsim {

struct HtmlInputs {
  const Report& report;
  std::string pipeline_svg;  // sim/report/pipeline_svg.hpp
  /// Per physical stage, its device memory over the step (sim/report/memory_curve.hpp).
  std::vector<std::vector<std::pair<double, double>>> memory_curves;
};

std::string report_html(const HtmlInputs& in);

}  // namespace trainsim
