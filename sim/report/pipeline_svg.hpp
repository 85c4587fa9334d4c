#pragma once
// The classic pipeline diagram, drawn from the simulated timeline: time on x, one row per
// pipeline stage (one GPU of it, tp 0 and dp 0, as the trace), each forward, backward, input- and
// weight-gradient, recomputation and optimizer pass a box coloured by pass (shaded by chunk when
// interleaved) and numbered by micro-batch where it is wide enough, the bubbles left blank; under
// each stage a thin row of its communication coloured by kind; a time axis in ms and a legend
// below the rows. Passes narrower than 1.5 px are merged with their neighbours into blocks of
// their blended colours (a steady state of hundreds of micro-batches on a page), and the caption
// says how many.
#include <string>

#include "sim/engine/engine.hpp"
#include "sim/plan/plan.hpp"

namespace trainsim {

/// `sim` must have been replayed with EngineOptions::keep_timelines. `title` heads the picture.
/// Each pass's box carries its stage, micro-batch and chunk (data-stage, data-mb, data-chunk),
/// and the root element the scale (data-ms-per-px, data-origin-x), so that tests and scripts can
/// read the diagram back.
/// `axis_s`: the seconds the time axis spans (0: the step's own), so that diagrams of several
/// plans drawn with the same value share one scale.
std::string pipeline_svg(const Plan& plan, const SimResult& sim, const std::string& title,
                         double axis_s = 0);

/// The colour of a kind of communication, here and in the HTML report.
const char* comm_color(CommKind kind);

/// "llama3.1-70b on h100-sxm-ndr: tp 8, pp 4, dp 2, mbs 1, 1f1b, 32 micro-batches".
std::string pipeline_title(const Plan& plan, const std::string& model, const std::string& platform);

}  // namespace trainsim
