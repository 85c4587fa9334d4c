#include "sim/cli/sweep_contention.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <variant>

#include "sim/core/child_process.hpp"
#include "sim/core/format.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/graph/symmetry.hpp"

namespace trainsim {

namespace {

// SimGrid replays every GPU where contention could load a stage's GPUs unlike one another: past
// this many GPUs that takes minutes a plan, and the replay is left out.
constexpr std::int64_t kMaxFullReplayGpus = 512;

// Why plan `index` is not replayed on SimGrid, or empty.
std::string why_not(const SweepContext& c, std::int64_t index) {
  const SweepPoint point = sweep_point(c.spec, index);
  const auto plan = sweep_plan(point);
  if (!std::holds_alternative<Plan>(plan)) return "no plan";
  const Plan& p = std::get<Plan>(plan);
  if (p.world_size() <= kMaxFullReplayGpus) return "";
  const Platform& platform = c.platforms[point.platform];
  const Topology topology(platform, p.world_size());
  const CostModel costs =
      compute_costs(c.model, platform, p, build_partition(c.model, platform, p));
  const ReplayChoice choice = choose_replay(p, costs, topology, true, false);
  if (choice.replay == Replay::kSymmetric) return "";
  return "left out: SimGrid would replay all " + format_grouped(p.world_size()) + " GPUs (" +
         choice.why_full + ")";
}

// Plan `index` replayed on SimGrid in a child process; its step time, or nullopt if it failed.
std::optional<double> simgrid_step(const SweepContext& c, std::int64_t index) {
  const auto text = run_in_child([&c, index] {
    const SweepPoint point = sweep_point(c.spec, index);
    const auto plan = sweep_plan(point);
    if (!std::holds_alternative<Plan>(plan)) return std::string();
    const Plan& p = std::get<Plan>(plan);
    const Platform& platform = c.platforms[point.platform];
    const double step =
        evaluate(c.model, platform, p, build_partition(c.model, platform, p), EngineKind::kSimGrid)
            .sim.step_time_s;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", step);
    return std::string(buf);
  });
  if (!text || text->empty()) return std::nullopt;
  return std::strtod(text->c_str(), nullptr);
}

}  // namespace

std::string simgrid_replays(const SweepContext& c, const std::vector<SweepEntry>& ranked,
                            std::int64_t n) {
  if (n <= 0 || ranked.empty()) return "";
  std::ostringstream out;
  out << "\non SimGrid (flows sharing links) against the analytic engine:\n";
  char line[512];
  std::snprintf(line, sizeof line, "%5s %14s %14s %11s  %s\n", "rank", "analytic (s)",
                "SimGrid (s)", "difference", "plan");
  out << line;
  for (std::size_t i = 0; i < ranked.size() && static_cast<std::int64_t>(i) < n; ++i) {
    const SweepEntry& e = ranked[i];
    if (const std::string why = why_not(c, e.index); !why.empty()) {
      std::snprintf(line, sizeof line, "%5zu %14s  %s; %s\n", i + 1,
                    format_fixed(e.step_s, 3).c_str(), e.plan.c_str(), why.c_str());
      out << line;
      continue;
    }
    const auto step = simgrid_step(c, e.index);
    const std::string sim = step ? format_fixed(*step, 3) : "failed";
    std::string diff = step ? format_fixed(100.0 * (*step - e.step_s) / e.step_s, 1) : "-";
    if (diff == "-0.0") diff = "0.0";
    if (step) diff += " %";
    std::snprintf(line, sizeof line, "%5zu %14s %14s %11s  %s\n", i + 1,
                  format_fixed(e.step_s, 3).c_str(), sim.c_str(), diff.c_str(), e.plan.c_str());
    out << line;
  }
  return out.str();
}

}  // namespace trainsim
