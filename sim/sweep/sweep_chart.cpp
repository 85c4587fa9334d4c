#include "sim/sweep/sweep_chart.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <vector>

#include "sim/core/format.hpp"

namespace trainsim {

namespace {

constexpr double kWidth = 760, kHeight = 460;
constexpr double kLeft = 90, kRight = 150, kTop = 50, kBottom = 60;  // the legend sits right
constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                    "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string px(double v) {
  return format_fixed(v, 1);
}

// Days on a log scale and GPU-hours on a linear one, each padded to its plans' range.
struct Axes {
  double log_lo, log_hi, y_lo, y_hi;
  double x(double days) const {
    return kLeft + (std::log10(days) - log_lo) / (log_hi - log_lo) * (kWidth - kLeft - kRight);
  }
  double y(double gpu_hours) const {
    return kHeight - kBottom - (gpu_hours - y_lo) / (y_hi - y_lo) * (kHeight - kTop - kBottom);
  }
};

// What a plan spends on the vertical axis: its GPU-hours, or its cost where the plans span
// platforms of different prices.
double spent(const SweepEntry& e, bool cost) {
  return cost ? e.cost_spent().value_or(0) : e.gpu_hours_spent();
}

Axes axes_of(const std::vector<SweepEntry>& plans, std::optional<double> deadline, bool cost) {
  double d_lo = plans.front().days_spent(), d_hi = d_lo;
  double g_lo = spent(plans.front(), cost), g_hi = g_lo;
  for (const auto& e : plans) {
    d_lo = std::min(d_lo, e.days_spent());
    d_hi = std::max(d_hi, e.days_spent());
    g_lo = std::min(g_lo, spent(e, cost));
    g_hi = std::max(g_hi, spent(e, cost));
  }
  if (deadline) {
    d_lo = std::min(d_lo, *deadline);
    d_hi = std::max(d_hi, *deadline);
  }
  const double pad = std::max({0.05 * (g_hi - g_lo), 0.01 * g_hi, 1.0});
  return {std::log10(d_lo) - 0.05, std::log10(d_hi) + 0.05, std::max(0.0, g_lo - pad), g_hi + pad};
}

// Ticks at 1, 2 and 5 x 10^k days inside the axis (and 3, 4 and 7 where it spans little more
// than a decade); five GPU-hour ticks at round steps.
void ticks(std::ostringstream& o, const Axes& a) {
  const double bottom = kHeight - kBottom;
  const std::vector<double> mantissas = a.log_hi - a.log_lo < 1.2
                                            ? std::vector<double>{1, 2, 3, 4, 5, 7}
                                            : std::vector<double>{1, 2, 5};
  for (int k = static_cast<int>(std::floor(a.log_lo)); k <= static_cast<int>(a.log_hi); ++k) {
    for (const double m : mantissas) {
      const double days = m * std::pow(10.0, k);
      if (std::log10(days) < a.log_lo || std::log10(days) > a.log_hi) continue;
      o << "<line x1=\"" << px(a.x(days)) << "\" y1=\"" << px(bottom) << "\" x2=\"" << px(a.x(days))
        << "\" y2=\"" << px(bottom + 5) << "\" stroke=\"#444\"/><text x=\"" << px(a.x(days))
        << "\" y=\"" << px(bottom + 18) << "\" text-anchor=\"middle\">"
        << format_grouped(static_cast<std::int64_t>(days)) << "</text>\n";
    }
  }
  const double raw = (a.y_hi - a.y_lo) / 5;
  const double unit = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / unit < 2 ? 2 * unit : raw / unit < 5 ? 5 * unit : 10 * unit;
  for (double g = std::ceil(a.y_lo / step) * step; g <= a.y_hi; g += step) {
    o << "<line x1=\"" << px(kLeft - 5) << "\" y1=\"" << px(a.y(g)) << "\" x2=\"" << px(kLeft)
      << "\" y2=\"" << px(a.y(g)) << "\" stroke=\"#444\"/><text x=\"" << px(kLeft - 8) << "\" y=\""
      << px(a.y(g) + 4) << "\" text-anchor=\"end\">" << format_grouped(static_cast<std::int64_t>(g))
      << "</text>\n";
  }
}

// A marker at (x, y): a circle, a square, a triangle or a diamond (one per platform), `r` across.
void marker(std::ostringstream& o, std::size_t shape, double x, double y, double r,
            const std::string& paint, const std::string& title) {
  const std::string tip = title.empty() ? "" : "<title>" + escape_markup(title) + "</title>";
  if (shape % 4 == 0) {
    const std::string radius = r == std::floor(r) ? std::to_string(static_cast<int>(r)) : px(r);
    o << "<circle cx=\"" << px(x) << "\" cy=\"" << px(y) << "\" r=\"" << radius << "\" " << paint
      << ">" << tip << "</circle>\n";
    return;
  }
  std::vector<std::pair<double, double>> corners;
  if (shape % 4 == 1) corners = {{-r, -r}, {r, -r}, {r, r}, {-r, r}};
  if (shape % 4 == 2) corners = {{0, -1.2 * r}, {1.1 * r, 0.8 * r}, {-1.1 * r, 0.8 * r}};
  if (shape % 4 == 3) corners = {{0, -1.3 * r}, {1.3 * r, 0}, {0, 1.3 * r}, {-1.3 * r, 0}};
  o << "<polygon points=\"";
  for (std::size_t i = 0; i < corners.size(); ++i) {
    o << (i ? " " : "") << px(x + corners[i].first) << "," << px(y + corners[i].second);
  }
  o << "\" " << paint << ">" << tip << "</polygon>\n";
}

void point(std::ostringstream& o, const Axes& a, const SweepEntry& e, const char* colour,
           std::size_t shape, bool cost) {
  const std::string what =
      cost ? "cost " + format_grouped(static_cast<std::int64_t>(spent(e, true)))
           : format_grouped(static_cast<std::int64_t>(e.gpu_hours_spent())) + " GPU-hours";
  marker(o, shape, a.x(e.days_spent()), a.y(spent(e, cost)), 4,
         "fill=\"" + std::string(colour) + "\" fill-opacity=\"0.75\"",
         format_grouped(e.gpus) + " GPUs, " + format_fixed(e.days_spent(), 1) + " days, " + what +
             ": " + e.plan);
}

}  // namespace

std::optional<std::string> sweep_svg(const std::vector<SweepEntry>& entries,
                                     std::optional<double> deadline_days,
                                     const std::string& title) {
  std::vector<SweepEntry> plans;
  for (const auto& e : entries) {
    // A budget of a few tokens rounds to 0 days: nothing to place on a log scale.
    if (e.status == "ok" && e.finishes() && e.days_spent() > 0) plans.push_back(e);
  }
  if (plans.empty()) return std::nullopt;
  const bool cost = ranked_by_cost(plans);
  const Axes a = axes_of(plans, deadline_days, cost);
  const bool failures = !plans.front().days_with_failures.empty();
  std::map<std::int64_t, const char*> colour;  // by GPU count, ascending
  for (const auto& e : plans) colour.emplace(e.gpus, nullptr);
  std::size_t next = 0;
  for (auto& [gpus, c] : colour) c = kColours[next++ % std::size(kColours)];
  std::vector<std::string> platforms;  // a marker shape each, in the order they first appear
  for (const auto& e : plans) {
    if (std::find(platforms.begin(), platforms.end(), e.platform) == platforms.end()) {
      platforms.push_back(e.platform);
    }
  }
  const auto shape_of = [&platforms](const SweepEntry& e) {
    return static_cast<std::size_t>(std::find(platforms.begin(), platforms.end(), e.platform) -
                                    platforms.begin());
  };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << px(kWidth) << "\" height=\""
    << px(kHeight) << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << px(kLeft) << "\" y=\"24\" font-size=\"14\">" << escape_markup(title)
    << "</text>\n"
    << "<line x1=\"" << px(kLeft) << "\" y1=\"" << px(kHeight - kBottom) << "\" x2=\""
    << px(kWidth - kRight) << "\" y2=\"" << px(kHeight - kBottom) << "\" stroke=\"#444\"/>\n"
    << "<line x1=\"" << px(kLeft) << "\" y1=\"" << px(kTop) << "\" x2=\"" << px(kLeft) << "\" y2=\""
    << px(kHeight - kBottom) << "\" stroke=\"#444\"/>\n";
  ticks(o, a);
  o << "<text x=\"" << px((kLeft + kWidth - kRight) / 2) << "\" y=\"" << px(kHeight - 15)
    << "\" text-anchor=\"middle\">days to train" << (failures ? " with failures" : "")
    << " (log scale)</text>\n"
    << "<text x=\"16\" y=\"" << px((kTop + kHeight - kBottom) / 2)
    << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " << px((kTop + kHeight - kBottom) / 2)
    << ")\">" << (cost ? "cost" : "GPU-hours") << (failures ? " with failures" : "") << "</text>\n";
  if (deadline_days) {
    const double x = a.x(*deadline_days);
    o << "<line x1=\"" << px(x) << "\" y1=\"" << px(kTop) << "\" x2=\"" << px(x) << "\" y2=\""
      << px(kHeight - kBottom) << "\" stroke=\"#d62728\" stroke-dasharray=\"6 4\"/>\n"
      << "<text x=\"" << px(x + 4) << "\" y=\"" << px(kTop + 12) << "\" fill=\"#d62728\">deadline "
      << format_fixed(*deadline_days, *deadline_days == std::floor(*deadline_days) ? 0 : 1)
      << " days</text>\n";
    const auto cheap = cheapest_within(entries, *deadline_days);
    if (!cheap.empty()) {
      const SweepEntry& best = cheap.front();
      o << "<circle cx=\"" << px(a.x(best.days_spent())) << "\" cy=\"" << px(a.y(spent(best, cost)))
        << "\" r=\"9\" fill=\"none\" stroke=\"black\" "
        << "stroke-width=\"2\"><title>cheapest within the deadline</title></circle>\n";
    }
  }
  for (const auto& e : plans) point(o, a, e, colour.at(e.gpus), shape_of(e), cost);
  double legend_y = kTop + 6;
  for (const auto& [gpus, c] : colour) {
    o << "<circle cx=\"" << px(kWidth - kRight + 20) << "\" cy=\"" << px(legend_y)
      << "\" r=\"5\" fill=\"" << c << "\"/><text x=\"" << px(kWidth - kRight + 30) << "\" y=\""
      << px(legend_y + 4) << "\">" << format_grouped(gpus) << " GPUs</text>\n";
    legend_y += 18;
  }
  // Several platforms: a shape each, under the colours.
  for (std::size_t i = 0; platforms.size() > 1 && i < platforms.size(); ++i) {
    legend_y += i == 0 ? 8 : 0;
    marker(o, i, kWidth - kRight + 20, legend_y, 5, "fill=\"#777\"", "");
    o << "<text x=\"" << px(kWidth - kRight + 30) << "\" y=\"" << px(legend_y + 4) << "\">"
      << escape_markup(platforms[i]) << "</text>\n";
    legend_y += 18;
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace trainsim
