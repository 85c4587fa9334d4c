#include "sim/report/published_text.hpp"

#include "sim/core/format.hpp"
#include "sim/core/percent.hpp"

namespace trainsim {

namespace {

// A published step time (or throughput) with trainsim's signed error against it and whether the
// calibration's band holds it.
std::string published_step_text(const Report& r, const PublishedFigure& f) {
  const double error = f.error_of(r.step_time_s);
  const bool inside = f.step_time_s >= r.step_time_p10_s && f.step_time_s <= r.step_time_p90_s;
  std::string s = format_fixed(f.step_time_s, 3) + " s";
  if (f.tokens_per_s_per_gpu > 0) {
    s += " (" + format_grouped(std::llround(f.tokens_per_s_per_gpu)) + " tokens/s per GPU)";
  }
  s += ", " + f.source + " (trainsim " + format_signed_percent(error);
  if (r.step_time_p90_s > r.step_time_p10_s) {
    s += (inside ? ", inside" : ", outside") + std::string(" the P10-P90 band");
  }
  return s + ")";
}

// A published peak allocation against the stage that allocates most.
std::string published_memory_text(const Report& r, const PublishedFigure& f) {
  const StageReport& s = r.largest_allocation();
  const double error = f.memory_error_of(s.peak_allocated_bytes);
  return "max allocated " + format_bytes(f.max_allocated_bytes) + ", " + f.source + " (trainsim " +
         format_bytes(s.peak_allocated_bytes) + " on stage " + std::to_string(s.index) + ", " +
         format_signed_percent(error) + ")";
}

}  // namespace

std::vector<std::string> published_lines(const Report& r) {
  const auto& pub = r.published;
  if (pub.figures.empty()) return {};
  if (!pub.not_compared.empty()) return {"not compared: " + pub.not_compared};
  std::vector<std::string> lines;
  for (const auto& f : pub.figures) {
    if (f.gives_step()) lines.push_back(published_step_text(r, f));
    if (f.gives_memory()) lines.push_back(published_memory_text(r, f));
  }
  return lines;
}

}  // namespace trainsim
