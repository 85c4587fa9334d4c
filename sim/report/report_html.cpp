#include "sim/report/report_html.hpp"

#include <algorithm>
#include <array>
#include <sstream>

#include "sim/core/format.hpp"
#include "sim/core/percent.hpp"
#include "sim/core/units.hpp"
#include "sim/report/pipeline_svg.hpp"
#include "sim/report/published_text.hpp"

namespace trainsim {

namespace {

std::string ms(double s) {
  return format_fixed(s * 1e3, 1);
}
std::string gib(double bytes) {
  return format_fixed(bytes / kGiB, 2);
}

// "4.268 - 4.726 s"; a band under 0.1 s with each end in its own unit, as format_step_time.
std::string step_range(double lo, double hi) {
  if (lo >= 0.1) return format_fixed(lo, 3) + " - " + format_step_time(hi);
  return format_step_time(lo) + " - " + format_step_time(hi);
}

void summary(std::ostringstream& o, const Report& r) {
  o << "<h2>Summary</h2>\n<table class=\"kv\">\n"
    << "<tr><th>step time</th><td>" << format_step_time(r.step_time_s) << " (P10-P90 "
    << step_range(r.step_time_p10_s, r.step_time_p90_s) << ")</td></tr>\n"
    << "<tr><th>tokens/s</th><td>" << format_grouped(std::llround(r.tokens_per_s)) << "</td></tr>\n"
    << "<tr><th>model TFLOP/s per GPU</th><td>" << format_fixed(r.model_tflops_per_gpu, 1)
    << "</td></tr>\n<tr><th>MFU</th><td>" << format_percent(r.mfu) << "</td></tr>\n"
    << "<tr><th>" << r.idle_name() << "</th><td>" << format_percent(r.bubble_fraction)
    << "</td></tr>\n";
  if (r.time_to_train) {
    o << "<tr><th>time to train</th><td>" << escape_markup(time_to_train_text(*r.time_to_train))
      << "</td></tr>\n";
    if (r.time_to_train->failures) {
      o << "<tr><th>with failures</th><td>"
        << escape_markup(failures_text(*r.time_to_train->failures)) << "</td></tr>\n";
    }
  }
  for (const auto& line : published_lines(r)) {
    o << "<tr><th>published</th><td>" << escape_markup(line) << "</td></tr>\n";
  }
  o << "</table>\n";
}

// The mean GPU's step as one bar: compute, exposed communication by kind, and the rest (bubble
// and other waits). The legend sits under the bar.
void breakdown(std::ostringstream& o, const Report& r) {
  std::vector<std::tuple<std::string, double, std::string>> parts = {
      {"compute", r.compute_s, "#4e79a7"}};
  double rest = r.step_time_s - r.compute_s;
  for (std::size_t k = 0; k < kNumCommKinds; ++k) {
    if (r.exposed_comm_s[k] <= 0) continue;
    parts.emplace_back(std::string("exposed ") + to_string(static_cast<CommKind>(k)) + " comm",
                       r.exposed_comm_s[k], comm_color(static_cast<CommKind>(k)));
    rest -= r.exposed_comm_s[k];
  }
  parts.emplace_back("bubble and other waits", std::max(0.0, rest), "#d9d9d9");
  const double width = 900, step = r.step_time_s > 0 ? r.step_time_s : 1;
  o << "<h2>Where the step goes</h2>\n<svg class=\"chart\" width=\"" << width << "\" height=\""
    << 30 + 20 * static_cast<double>(parts.size()) << "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
  double x = 0;
  for (const auto& [name, seconds, color] : parts) {
    const double w = seconds / step * width;
    o << "<rect x=\"" << format_fixed(x, 2) << "\" y=\"0\" width=\"" << format_fixed(w, 2)
      << "\" height=\"20\" fill=\"" << color << "\"><title>" << escape_markup(name)
      << "</title></rect>\n";
    x += w;
  }
  double y = 34;
  for (const auto& [name, seconds, color] : parts) {
    o << "<rect x=\"0\" y=\"" << y - 10 << "\" width=\"12\" height=\"12\" fill=\"" << color
      << "\"/><text x=\"18\" y=\"" << y << "\">" << escape_markup(name) << ": "
      << format_fixed(seconds, 3) << " s (" << format_percent(seconds / step) << ")</text>\n";
    y += 20;
  }
  o << "</svg>\n";
}

void stage_table(std::ostringstream& o, const Report& r) {
  o << "<h2>Stages</h2>\n<table>\n<tr><th>stage</th><th>blocks</th><th>params per GPU</th>"
       "<th>forward ms</th><th>backward ms</th><th>compute s</th><th>exposed comm s</th>"
       "<th>idle s</th><th>peak GiB</th></tr>\n";
  for (const StageReport& s : r.stages) {
    std::vector<std::string> chunks;
    for (const auto& c : s.chunks) chunks.push_back(join(c, ", "));
    double exposed = 0;
    for (double e : s.exposed_comm_s) exposed += e;
    o << "<tr><td>" << s.index << "</td><td>" << escape_markup(join(chunks, " | ")) << "</td><td>"
      << format_grouped(s.params_per_gpu) << "</td><td>" << ms(s.forward_s) << "</td><td>"
      << ms(s.backward_s) << "</td><td>" << format_fixed(s.compute_s, 3) << "</td><td>"
      << format_fixed(exposed, 3) << "</td><td>" << format_fixed(s.idle_s, 3) << "</td><td>"
      << gib(s.peak_memory_bytes) << "</td></tr>\n";
  }
  o << "</table>\n";
  if (const StageReport* most = stage_waiting_most(r)) {
    o << "<p>Forward and backward include each pass's wait for the calls beside its kernels, up "
         "to "
      << ms(most->wait_s) << " ms a micro-batch; compute is the kernels alone.</p>\n";
  }
}

// One stage's memory over the step, with its peak marked and named above the plot.
// All stages share one scale: `low` to `high` bytes, drawn from the plot's bottom to its top.
void memory_chart(std::ostringstream& o, const StageReport& s,
                  const std::vector<std::pair<double, double>>& curve, double step, double low,
                  double high) {
  const double width = 900, height = 80, top = 18, left = 84;
  o << "<svg class=\"chart\" width=\"" << width + left << "\" height=\"" << height + top + 4
    << "\" xmlns=\"http://www.w3.org/2000/svg\">\n<text x=\"" << left << "\" y=\"12\">stage "
    << s.index << ": peak " << gib(s.peak_memory_bytes) << " GiB</text>\n<text x=\"" << left - 4
    << "\" y=\"" << top + 10 << "\" text-anchor=\"end\">" << gib(high) << " GiB</text>\n<text x=\""
    << left - 4 << "\" y=\"" << top + height << "\" text-anchor=\"end\">" << gib(low)
    << " GiB</text>\n<polyline fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"1.5\" points=\"";
  double previous = -1;
  for (const auto& [t, bytes] : curve) {
    const double x = left + t / step * width;
    const double y = top + height * (1 - (bytes - low) / (high - low));
    if (previous >= 0) o << format_fixed(x, 1) << "," << format_fixed(previous, 1) << " ";
    o << format_fixed(x, 1) << "," << format_fixed(y, 1) << " ";
    previous = y;
  }
  o << "\"/>\n<line x1=\"" << left << "\" x2=\"" << left + width << "\" y1=\"" << top + height
    << "\" y2=\"" << top + height << "\" stroke=\"#444\"/>\n</svg>\n";
}

// What holds each stage's peak, as a table (GiB per GPU).
void memory_table(std::ostringstream& o, const Report& r) {
  o << "<table>\n<tr><th>stage</th><th>weights</th><th>gradients</th><th>master weights</th>"
       "<th>optimizer</th><th>activations</th><th>micro-batches in flight</th><th>runtime</th>"
       "<th>peak</th></tr>\n";
  for (const StageReport& s : r.stages) {
    const auto& m = s.memory;
    o << "<tr><td>" << s.index << "</td><td>" << gib(m.weights) << "</td><td>" << gib(m.gradients)
      << "</td><td>" << gib(m.master_weights) << "</td><td>" << gib(m.optimizer) << "</td><td>"
      << gib(m.activations) << "</td><td>" << m.microbatches_in_flight << "</td><td>"
      << gib(m.runtime) << "</td><td>" << gib(s.peak_memory_bytes) << "</td></tr>\n";
  }
  o << "</table>\n";
  for (const StageReport& s : r.stages) {
    const auto& m = s.memory;
    if (m.deferred_microbatches == 0) continue;
    o << "<p>Stage " << s.index << "'s activations at the peak include " << gib(m.deferred_lm_head)
      << " GiB of LM-head inputs and logits gradients kept for " << m.deferred_microbatches
      << " deferred weight gradient" << (m.deferred_microbatches == 1 ? "" : "s") << ".</p>\n";
  }
}

void diagnostics(std::ostringstream& o, const Report& r) {
  o << "<h2>Diagnostics</h2>\n";
  if (r.diagnostics.empty()) {
    o << "<p>None.</p>\n";
    return;
  }
  o << "<ul class=\"diag\">\n";
  for (const Diagnostic& d : r.diagnostics) {
    o << "<li class=\"" << to_string(d.severity) << "\"><b>" << to_string(d.severity) << " "
      << escape_markup(d.id) << "</b>"
      << (d.stage ? " (stage " + std::to_string(*d.stage) + ")" : std::string()) << ": "
      << escape_markup(d.message);
    if (!d.fix.empty()) o << "<br><i>fix:</i> " << escape_markup(d.fix);
    o << "</li>\n";
  }
  o << "</ul>\n";
}

}  // namespace

std::string report_html(const HtmlInputs& in) {
  const Report& r = in.report;
  std::ostringstream o;
  const std::string title = r.model + " on " + r.platform + " (" + format_grouped(r.gpus) +
                            " GPUs)" + (r.scenario.empty() ? "" : ": " + r.scenario);
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
    << escape_markup(title) << "</title>\n<style>\n"
    << "body{font-family:sans-serif;margin:24px;color:#222;max-width:1560px}"
       "table{border-collapse:collapse;margin:8px 0 16px}"
       "th,td{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:13px}"
       "th{background:#f3f3f3}td:nth-child(2){text-align:left}"
       ".kv td{text-align:left}.chart{display:block;margin:6px 0}.chart text{font-size:12px}"
       ".diag li{margin:6px 0}.error b{color:#b00}.warning b{color:#a60}.info b{color:#06a}"
       ".scroll{overflow-x:auto}\n</style>\n</head>\n<body>\n<h1>"
    << escape_markup(title) << "</h1>\n";
  summary(o, r);
  breakdown(o, r);
  o << "<h2>Pipeline</h2>\n<div class=\"scroll\">\n" << in.pipeline_svg << "</div>\n";
  stage_table(o, r);
  o << "<h2>Memory per GPU over the step</h2>\n";
  double low = 0, high = 0;
  for (const auto& curve : in.memory_curves) {
    for (const auto& [t, bytes] : curve) {
      low = low > 0 ? std::min(low, bytes) : bytes;
      high = std::max(high, bytes);
    }
  }
  if (high <= low) high = low + kGiB;
  for (std::size_t s = 0; s < r.stages.size() && s < in.memory_curves.size(); ++s) {
    memory_chart(o, r.stages[s], in.memory_curves[s], r.step_time_s > 0 ? r.step_time_s : 1, low,
                 high);
  }
  memory_table(o, r);
  diagnostics(o, r);
  o << "<p><small>trainsim " << escape_markup(r.provenance.trainsim_version) << ", engine "
    << escape_markup(r.provenance.engine) << "</small></p>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace trainsim
