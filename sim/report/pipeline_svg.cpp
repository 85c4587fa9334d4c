#include "sim/report/pipeline_svg.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "sim/core/format.hpp"
#include "sim/plan/layout.hpp"
#include "sim/report/memory_curve.hpp"

namespace trainsim {

namespace {

constexpr double kPlotWidth = 1400;  // px for the whole step
constexpr double kLeft = 96;         // stage labels
constexpr double kTop = 52;          // title and caption
constexpr double kRow = 22;          // a stage's passes
constexpr double kCommRow = 4;       // each kind of its communication, under it
constexpr double kGap = 6;
constexpr double kNarrow = 1.5;  // px: narrower boxes merge with their neighbours
constexpr double kBlock = 20;    // px: the widest block of merged boxes

struct Box {
  double start = 0;
  double end = 0;
  ComputeKind kind = ComputeKind::kOther;
  std::int32_t microbatch = -1;
  std::int32_t chunk = 0;
  std::int64_t merged = 1;              // passes the box stands for
  bool mixed = false;                   // of more than one kind of pass
  std::array<double, 3> rgb_seconds{};  // a merged box: its passes' colours times their length
  double busy = 0;                      // and their lengths
};

std::array<int, 3> pass_rgb(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::kForward:
      return {78, 121, 167};
    case ComputeKind::kBackward:
      return {89, 161, 79};
    case ComputeKind::kBackwardInput:
      return {140, 209, 125};
    case ComputeKind::kBackwardWeight:
      return {176, 122, 161};
    case ComputeKind::kRecompute:
      return {242, 142, 43};
    default:
      return {156, 156, 156};
  }
}

// The pass's colour, lighter for later chunks of an interleaved stage.
std::string pass_color(ComputeKind kind, std::int64_t chunk, std::int64_t chunks) {
  const auto rgb = pass_rgb(kind);
  const double mix =
      chunks > 1 ? 0.5 * static_cast<double>(chunk) / static_cast<double>(chunks) : 0;
  std::ostringstream o;
  o << "rgb(";
  for (std::size_t i = 0; i < 3; ++i) {
    o << (i ? "," : "") << std::lround(rgb[i] + (255 - rgb[i]) * mix);
  }
  o << ")";
  return o.str();
}

std::string px(double v) {
  return format_fixed(v, 2);
}

// A merged box's colour: its passes' colours weighted by their length.
std::string blended(const Box& b) {
  std::ostringstream o;
  o << "rgb(";
  for (std::size_t i = 0; i < 3; ++i) {
    o << (i ? "," : "") << std::lround(b.busy > 0 ? b.rgb_seconds[i] / b.busy : 0.0);
  }
  o << ")";
  return o.str();
}

// A stage's passes as boxes: a pass run in pieces (parameter gathers) is one box from its first
// piece's start to its last one's end; passes under 1.5 px merge with their neighbours into
// blocks of up to 20 px.
std::vector<Box> stage_boxes(const std::vector<Span>& timeline, double px_per_s,
                             std::int64_t& merged) {
  std::vector<Box> boxes;
  for (const Span& s : compute_in_start_order(timeline)) {
    if (s.compute_kind == ComputeKind::kWait) {  // the pass waiting for calls beside it
      if (!boxes.empty()) boxes.back().end = s.end;
      continue;
    }
    if (!boxes.empty() && boxes.back().kind == s.compute_kind &&
        boxes.back().microbatch == s.microbatch && boxes.back().chunk == s.chunk) {
      boxes.back().end = s.end;  // the next piece of the same pass
      continue;
    }
    boxes.push_back({s.start, s.end, s.compute_kind, s.microbatch, s.chunk, 1});
  }
  std::vector<Box> drawn;
  const auto weigh = [](Box& into, const Box& b) {
    const auto rgb = pass_rgb(b.kind);
    for (std::size_t i = 0; i < 3; ++i) into.rgb_seconds[i] += rgb[i] * (b.end - b.start);
    into.busy += b.end - b.start;
  };
  for (const Box& b : boxes) {
    const bool narrow = (b.end - b.start) * px_per_s < kNarrow;
    const auto joins = [&](const Box& last) {
      const double w = (last.end - last.start) * px_per_s;
      return (last.merged > 1 || w < kNarrow) && w < kBlock &&
             (b.start - last.end) * px_per_s < kNarrow;
    };
    if (narrow && !drawn.empty() && joins(drawn.back())) {
      Box& block = drawn.back();
      if (block.merged == 1) weigh(block, block);
      weigh(block, b);
      block.mixed = block.mixed || block.kind != b.kind;
      block.end = b.end;
      ++block.merged;
      ++merged;
      continue;
    }
    drawn.push_back(b);
  }
  return drawn;
}

// Communication of one kind as the union of its spans, joined across gaps under 1.5 px.
std::vector<std::pair<double, double>> comm_intervals(const std::vector<Span>& timeline,
                                                      CommKind kind, double px_per_s) {
  std::vector<std::pair<double, double>> spans;
  for (const Span& s : timeline) {
    if (!s.compute && s.comm == kind && s.end > s.start) spans.emplace_back(s.start, s.end);
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<double, double>> out;
  for (const auto& s : spans) {
    if (!out.empty() && (s.first - out.back().second) * px_per_s < kNarrow) {
      out.back().second = std::max(out.back().second, s.second);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

double nice_step(double span) {
  const double raw = span / 8;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

// "2,500" for whole milliseconds, "7.5" or "0.25" with the decimals the tick needs.
std::string tick_label(double t, double tick) {
  int decimals = 0;
  for (double scaled = tick; decimals < 6 && std::abs(scaled - std::round(scaled)) > 1e-6;
       scaled *= 10) {
    ++decimals;
  }
  return decimals == 0 ? format_grouped(std::llround(t)) : format_fixed(t, decimals);
}

}  // namespace

namespace {

// The picture, drawn row by row: each stage's passes and communication, then the time axis and
// the legend below them.
class Diagram {
 public:
  /// `comms`: the kinds of communication any stage has, each a thin row under every stage.
  Diagram(const Plan& plan, double axis_s, double step_s, std::set<CommKind> comms)
      : vp_(plan.vp),
        step_ms_(axis_s * 1e3),
        own_step_ms_(step_s * 1e3),
        px_per_s_(kPlotWidth / axis_s),
        stage_height_(kRow + kCommRow * static_cast<double>(comms.size()) + kGap),
        rows_bottom_(kTop + static_cast<double>(plan.pp) * stage_height_),
        comms_(std::move(comms)) {}

  void stage(std::int64_t s, const std::vector<Span>& timeline) {
    const double y = kTop + static_cast<double>(s) * stage_height_;
    body_ << "<text x=\"" << px(kLeft - 8) << "\" y=\"" << px(y + 15)
          << "\" text-anchor=\"end\" class=\"label\">stage " << s << "</text>\n";
    for (const Box& b : stage_boxes(timeline, px_per_s_, merged_)) {
      passes_.insert(b.kind);
      const double x = kLeft + b.start * px_per_s_, w = (b.end - b.start) * px_per_s_;
      body_ << "<rect class=\"pass " << (b.mixed ? "mixed" : pass_label(b.kind))
            << (b.merged > 1 ? " merged" : "") << "\" data-stage=\"" << s << "\" data-mb=\""
            << b.microbatch << "\" data-chunk=\"" << b.chunk << "\""
            << (b.merged > 1 ? " data-count=\"" + std::to_string(b.merged) + "\"" : "") << " x=\""
            << px(x) << "\" y=\"" << px(y) << "\" width=\"" << px(w) << "\" height=\"" << px(kRow)
            << "\" fill=\"" << (b.merged > 1 ? blended(b) : pass_color(b.kind, b.chunk, vp_))
            << "\"/>\n";
      const std::string label = b.microbatch >= 0 ? std::to_string(b.microbatch) : "";
      if (b.merged == 1 && !label.empty() && w >= 6.0 * static_cast<double>(label.size()) + 3) {
        body_ << "<text x=\"" << px(x + w / 2) << "\" y=\"" << px(y + 15)
              << "\" text-anchor=\"middle\" class=\"mb\">" << label << "</text>\n";
      }
    }
    double row = y + kRow + 1;
    for (const CommKind kind : comms_) {
      for (const auto& [a, e] : comm_intervals(timeline, kind, px_per_s_)) {
        body_ << "<rect class=\"comm " << to_string(kind) << "\" x=\"" << px(kLeft + a * px_per_s_)
              << "\" y=\"" << px(row) << "\" width=\"" << px((e - a) * px_per_s_) << "\" height=\""
              << px(kCommRow - 1) << "\" fill=\"" << comm_color(kind) << "\"/>\n";
      }
      row += kCommRow;
    }
  }

  void axis() {
    const double tick = nice_step(step_ms_), y = rows_bottom_;
    body_ << "<line x1=\"" << px(kLeft) << "\" y1=\"" << px(y) << "\" x2=\""
          << px(kLeft + kPlotWidth) << "\" y2=\"" << px(y) << "\" class=\"axis\"/>\n";
    for (std::int64_t i = 0; static_cast<double>(i) * tick <= step_ms_ + 1e-9; ++i) {
      const double t = static_cast<double>(i) * tick;
      const double x = kLeft + t / step_ms_ * kPlotWidth;
      body_ << "<line x1=\"" << px(x) << "\" y1=\"" << px(y) << "\" x2=\"" << px(x) << "\" y2=\""
            << px(y + 5) << "\" class=\"axis\"/>\n<text x=\"" << px(x) << "\" y=\"" << px(y + 18)
            << "\" text-anchor=\"middle\" class=\"label\">" << tick_label(t, tick) << "</text>\n";
    }
    body_ << "<text x=\"" << px(kLeft + kPlotWidth / 2) << "\" y=\"" << px(y + 34)
          << "\" text-anchor=\"middle\" class=\"label\">time (ms)</text>\n";
  }

  // What the picture shows, below the axis: passes, then communication kinds; an item that would
  // run past the right edge starts a new line.
  void legend() {
    legend_y_ = rows_bottom_ + 50;
    double x = kLeft;
    const auto item = [&](const std::string& color, const std::string& name) {
      const double w = 16 + 7.0 * static_cast<double>(name.size()) + 18;
      if (x + w > width() && x > kLeft) {
        x = kLeft;
        legend_y_ += 20;
      }
      body_ << "<rect x=\"" << px(x) << "\" y=\"" << px(legend_y_)
            << "\" width=\"12\" height=\"12\" fill=\"" << color << "\"/>\n<text x=\"" << px(x + 16)
            << "\" y=\"" << px(legend_y_ + 10) << "\" class=\"label\">" << name << "</text>\n";
      x += w;
    };
    for (auto kind :
         {ComputeKind::kForward, ComputeKind::kBackward, ComputeKind::kBackwardInput,
          ComputeKind::kBackwardWeight, ComputeKind::kRecompute, ComputeKind::kOptimizer}) {
      if (passes_.count(kind)) item(pass_color(kind, 0, 1), pass_label(kind));
    }
    for (std::size_t k = 0; k < kNumCommKinds; ++k) {
      const auto kind = static_cast<CommKind>(k);
      if (comms_.count(kind)) item(comm_color(kind), std::string(to_string(kind)) + " comm");
    }
  }

  std::string svg(const std::string& title) const {
    const double height = legend_y_ + 30;
    std::string caption = "one GPU per stage (tp 0, dp 0); step " + format_fixed(own_step_ms_, 1) +
                          " ms; boxes numbered by micro-batch";
    if (vp_ > 1) caption += ", later chunks lighter";
    if (merged_ > 0) {
      caption += "; " + std::to_string(merged_) +
                 " passes under 1.5 px merged into blocks of their blended colours";
    }
    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << px(width()) << "\" height=\""
      << px(height) << "\" viewBox=\"0 0 " << px(width()) << " " << px(height)
      << "\" data-ms-per-px=\"" << format_number(step_ms_ / kPlotWidth) << "\" data-origin-x=\""
      << px(kLeft) << "\">\n"
      << "<style>text{font-family:sans-serif;font-size:11px;fill:#222}"
         ".mb{font-size:10px;fill:#fff}.title{font-size:14px;font-weight:bold}"
         ".axis{stroke:#444;stroke-width:1}</style>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
      << "<text x=\"" << px(kLeft) << "\" y=\"20\" class=\"title\">" << escape_markup(title)
      << "</text>\n<text x=\"" << px(kLeft) << "\" y=\"38\" class=\"label\">"
      << escape_markup(caption) << "</text>\n"
      << body_.str() << "</svg>\n";
    return o.str();
  }

 private:
  static double width() { return kLeft + kPlotWidth + 24; }

  std::int64_t vp_;
  double step_ms_;  // the time axis
  double own_step_ms_;
  double px_per_s_;
  double stage_height_;
  double rows_bottom_;
  double legend_y_ = 0;
  std::ostringstream body_;
  std::int64_t merged_ = 0;
  std::set<ComputeKind> passes_;
  std::set<CommKind> comms_;
};

}  // namespace

std::string pipeline_svg(const Plan& plan, const SimResult& sim, const std::string& title,
                         double axis_s) {
  const Layout layout(plan);
  std::set<CommKind> comms;
  for (std::int64_t s = 0; s < plan.pp; ++s) {
    for (const Span& span : sim.gpu_timeline(layout.stage_leader(s))) {
      if (!span.compute && span.end > span.start) comms.insert(span.comm);
    }
  }
  const double axis = axis_s > 0 ? axis_s : sim.step_time_s;
  Diagram d(plan, axis > 0 ? axis : 1.0, sim.step_time_s, std::move(comms));
  for (std::int64_t s = 0; s < plan.pp; ++s) d.stage(s, sim.gpu_timeline(layout.stage_leader(s)));
  d.axis();
  d.legend();
  return d.svg(title);
}

const char* comm_color(CommKind kind) {
  switch (kind) {
    case CommKind::kTP:
      return "#edc948";
    case CommKind::kCP:
      return "#ff9da7";
    case CommKind::kEP:
      return "#9c755f";
    case CommKind::kPP:
      return "#76b7b2";
    case CommKind::kDP:
      return "#e15759";
  }
  return "#000000";
}

std::string pipeline_title(const Plan& plan, const std::string& model,
                           const std::string& platform) {
  std::string t = model + " on " + platform + ": tp " + std::to_string(plan.tp) + ", pp " +
                  std::to_string(plan.pp);
  if (plan.vp > 1) t += " x vp " + std::to_string(plan.vp);
  t += ", dp " + std::to_string(plan.dp);
  if (plan.cp > 1) t += ", cp " + std::to_string(plan.cp);
  if (plan.ep > 1) t += ", ep " + std::to_string(plan.ep);
  t += ", mbs " + std::to_string(plan.mbs) + ", " + to_string(plan.schedule) + ", " +
       std::to_string(plan.num_microbatches()) + " micro-batches";
  if (plan.recompute != Recompute::kNone)
    t += ", recompute " + std::string(to_string(plan.recompute));
  return t;
}

}  // namespace trainsim
