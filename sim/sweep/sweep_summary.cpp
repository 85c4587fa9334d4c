#include "sim/sweep/sweep_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "sim/core/format.hpp"
#include "sim/plan/plan_schema.hpp"
#include "sim/sweep/sweep_csv.hpp"

namespace trainsim {

namespace {

double number(const std::string& s) {
  return s.empty() ? 0.0 : std::stod(s);
}

// A refusal's kind: what it names before its first ": " (a flag, a JSON path, "partition defect").
std::string refusal_kind(const std::string& reason) {
  const auto colon = reason.find(": ");
  return colon == std::string::npos ? reason : reason.substr(0, colon);
}

// What a table shows beyond the plan's speed: with failures, the days with failures in the days
// column and the share they lose; with GPU-hours, those the plan spends (with failures where
// given).
struct Columns {
  bool failures = false;
  bool gpu_hours = false;
  bool cost = false;  // the cost spent (a deadline's plans ranked by cost)
};

void table_row(std::ostringstream& out, const std::string& rank, const SweepEntry& e, Columns c) {
  const std::string& days = c.failures ? e.days_with_failures : e.days;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%5s %6lld %10s %12s %6s %9s %9s", rank.c_str(),
                static_cast<long long>(e.gpus), format_fixed(e.step_s, 3).c_str(),
                format_grouped(static_cast<std::int64_t>(e.tokens_per_s)).c_str(),
                (format_fixed(100 * e.mfu, 1) + "%").c_str(), e.peak_gib.c_str(),
                days.empty() ? "-" : days.c_str());
  out << buf;
  if (c.failures) {
    std::snprintf(buf, sizeof buf, " %6s",
                  (format_fixed(100 * e.lost_to_failures, 1) + "%").c_str());
    out << buf;
  }
  if (c.gpu_hours) {
    std::snprintf(buf, sizeof buf, " %12s",
                  format_grouped(static_cast<std::int64_t>(e.gpu_hours_spent())).c_str());
    out << buf;
  }
  if (c.cost) {
    std::snprintf(buf, sizeof buf, " %14s",
                  format_grouped(static_cast<std::int64_t>(e.cost_spent().value_or(0))).c_str());
    out << buf;
  }
  out << "  " << e.plan << "\n";
}

void table_header(std::ostringstream& out, const char* first, Columns c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%5s %6s %10s %12s %6s %9s %9s", first, "GPUs", "step (s)",
                "tokens/s", "MFU", "peak GiB", c.failures ? "days+fail" : "days");
  out << buf;
  if (c.failures) out << "   lost";
  if (c.gpu_hours) out << "    GPU-hours";
  if (c.cost) out << "           cost";
  out << "  plan\n";
}

// Ranked by throughput less what failures take (the time to train a token budget, with its
// failures; with one global batch and no failure model, the step time), the lower index first on
// ties.
bool faster(const SweepEntry& a, const SweepEntry& b) {
  return a.goodput() > b.goodput() || (a.goodput() == b.goodput() && a.index < b.index);
}

// Where plans span several platforms, each label starts with its platform.
void label_platforms(std::vector<SweepEntry>& entries) {
  std::set<std::string> platforms;
  for (const auto& e : entries) platforms.insert(e.platform);
  if (platforms.size() < 2) return;
  for (auto& e : entries) {
    if (!e.plan.empty()) e.plan = e.platform + ": " + e.plan;
  }
}

// The plans that finish within the deadline, fewest GPU-hours (or least cost) first, or why there
// are none.
void deadline_table(std::ostringstream& out, const std::vector<SweepEntry>& entries,
                    const std::vector<SweepEntry>& priced, std::int64_t top, double deadline_days,
                    Columns c) {
  const std::string within =
      "within " + format_fixed(deadline_days, deadline_days == std::floor(deadline_days) ? 0 : 3) +
      " days";
  if (std::none_of(priced.begin(), priced.end(),
                   [](const SweepEntry& e) { return !e.days.empty(); })) {
    out << "\nno days to hold to the deadline (" << within << "): the sweep has no token budget\n";
    return;
  }
  const std::vector<SweepEntry> cheap = cheapest_within(entries, deadline_days);
  if (cheap.empty()) {
    const SweepEntry& fastest = priced.front();
    out << "\nno plan finishes " << within
        << (fastest.finishes()
                ? "; the fastest takes " +
                      (c.failures ? fastest.days_with_failures : fastest.days) + " days\n"
                : ": failures stop every plan before it ends\n");
    return;
  }
  c.gpu_hours = true;
  c.cost = ranked_by_cost(cheap);
  out << "\ncheapest " << std::min<std::int64_t>(top, static_cast<std::int64_t>(cheap.size()))
      << " plans " << within << " (" << (c.cost ? "cost" : "GPU-hours")
      << (c.failures ? " with failures" : "") << "; " << cheap.size() << " finish in time):\n";
  table_header(out, "rank", c);
  for (std::int64_t i = 0; i < top && i < static_cast<std::int64_t>(cheap.size()); ++i) {
    table_row(out, std::to_string(i + 1), cheap[static_cast<std::size_t>(i)], c);
  }
}

// Entries whose plans differ only in fields the label leaves out (it shows the sizes and the usual
// options) would read alike: each such field is appended to their labels ("moe-token-dispatcher-
// type allgather"). Fields derived from labelled ones (the report writes them resolved) never
// differ within a group of one label, so they stay out.
void label_what_differs(std::vector<SweepEntry>& entries,
                        const std::vector<std::map<std::string, std::string>>& plans) {
  std::map<std::string, std::vector<std::size_t>> alike;  // label -> its entries
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].plan.empty()) alike[entries[i].plan].push_back(i);
  }
  for (const auto& [label, group] : alike) {
    if (group.size() < 2) continue;
    for (const auto& f : plan_fields()) {
      if (f.label || f.name == "gpus") continue;  // the tables give the GPUs a column
      std::set<std::string> values;
      for (std::size_t i : group) values.insert(plans[i].at(f.name));
      if (values.size() < 2) continue;
      const std::string flag = flag_of(f.name).substr(2);  // without "--"
      for (std::size_t i : group) {
        const std::string& value = plans[i].at(f.name);
        entries[i].plan += " " + flag + " " + (value.empty() ? "-" : value);
      }
    }
  }
}

}  // namespace

bool ranked_by_cost(const std::vector<SweepEntry>& entries) {
  std::set<std::string> platforms;
  bool priced = true;  // every plan that finishes has a cost
  for (const auto& e : entries) {
    if (e.status != "ok" || !e.finishes()) continue;
    platforms.insert(e.platform);
    priced = priced && e.cost_spent().has_value();
  }
  return platforms.size() > 1 && priced;
}

std::vector<SweepEntry> sweep_entries(const std::vector<std::string>& lines) {
  const auto& columns = sweep_csv_columns();
  std::map<std::string, std::size_t> at;  // column -> its position, looked up once
  for (std::size_t i = 0; i < columns.size(); ++i) at[columns[i]] = i;
  std::vector<SweepEntry> out;
  std::vector<std::map<std::string, std::string>> plans;  // each entry's plan columns
  for (const auto& line : lines) {
    if (!sweep_csv_index(line)) continue;
    const auto fields = split_csv_line(line);
    const auto f = [&](const std::string& column) -> const std::string& {
      return fields[at.at(column)];
    };
    SweepEntry e;
    e.index = std::stoll(f("index"));
    e.platform = f("platform");
    e.gpus = std::stoll(f("gpus"));
    e.status = f("status");
    e.reason = f("reason");
    // The plan columns read back as the plan they were written from, labelled by the schema; a
    // plan refused by rule may hold values no plan takes (dp 0) and is never listed.
    std::map<std::string, std::string> plan;
    for (const auto& name : plan_field_names()) plan[name] = f(name);
    if (!f("tp").empty() && e.status != "rule") {
      e.plan = plan_label(plan_from_text(plan, "sweep file, plan " + f("index")));
    }
    plans.push_back(std::move(plan));
    e.step_s = number(f("step_s"));
    e.tokens_per_s = number(f("tokens_per_s"));
    e.mfu = number(f("mfu"));
    e.peak_gib = f("peak_memory_gib");
    e.days = f("days");
    e.cost = f("cost");
    e.gpu_hours = f("gpu_hours");
    e.days_with_failures = f("days_with_failures");
    e.lost_to_failures = number(f("lost_to_failures"));
    e.gpu_hours_with_failures = f("gpu_hours_with_failures");
    e.cost_with_failures = f("cost_with_failures");
    out.push_back(std::move(e));
  }
  label_what_differs(out, plans);
  label_platforms(out);
  return out;
}

std::vector<SweepEntry> ranked(const std::vector<SweepEntry>& entries) {
  std::vector<SweepEntry> out;
  for (const auto& e : entries) {
    if (e.status == "ok") out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(), faster);
  return out;
}

std::vector<SweepEntry> pareto_front(const std::vector<SweepEntry>& entries) {
  std::map<std::int64_t, const SweepEntry*> best;  // fastest per GPU count, lowest index on ties
  for (const auto& e : entries) {
    if (e.status != "ok") continue;
    auto& b = best[e.gpus];
    if (!b || faster(e, *b)) b = &e;
  }
  std::vector<SweepEntry> front;
  for (const auto& [gpus, e] : best) {
    if (front.empty() || e->goodput() > front.back().goodput()) front.push_back(*e);
  }
  return front;
}

std::vector<SweepEntry> cheapest_within(const std::vector<SweepEntry>& entries,
                                        double deadline_days) {
  // Each plan's sort key read from its text once, not at every comparison.
  using Key = std::tuple<double, double, std::int64_t>;  // GPU-hours (or cost), days, index
  std::vector<SweepEntry> in_time;
  for (const auto& e : entries) {
    if (e.status == "ok" && e.finishes() && e.days_spent() <= deadline_days) in_time.push_back(e);
  }
  const bool cost = ranked_by_cost(in_time);
  std::vector<std::pair<Key, const SweepEntry*>> keyed;
  for (const auto& e : in_time) {
    const double spent = cost ? *e.cost_spent() : e.gpu_hours_spent();
    keyed.push_back({{spent, e.days_spent(), e.index}, &e});
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SweepEntry> out;
  out.reserve(keyed.size());
  for (const auto& [key, e] : keyed) out.push_back(*e);
  return out;
}

std::string sweep_summary(const std::vector<SweepEntry>& entries, std::int64_t top,
                          std::optional<double> deadline_days) {
  std::ostringstream out;
  std::map<std::string, std::int64_t> by_status;
  std::map<std::string, std::pair<std::int64_t, std::string>> refusals;  // kind -> count, example
  std::set<std::int64_t> gpu_counts;
  for (const auto& e : entries) {
    ++by_status[e.status];
    gpu_counts.insert(e.gpus);
    if (e.status != "ok" && e.status != "same") {
      auto& r = refusals[e.status + ": " + refusal_kind(e.reason)];
      if (r.first++ == 0) r.second = e.reason;
    }
  }
  out << format_grouped(static_cast<std::int64_t>(entries.size())) << " plans";
  if (!gpu_counts.empty()) {
    out << " on " << format_grouped(*gpu_counts.begin());
    if (gpu_counts.size() > 1) out << " to " << format_grouped(*gpu_counts.rbegin());
    out << " GPUs";
  }
  out << ": " << format_grouped(by_status["ok"]) << " simulated; ";
  if (by_status["same"] > 0) {
    out << format_grouped(by_status["same"]) << " the same plan as another row; ";
  }
  out << "refused by rule " << by_status["rule"] << ", partition defect " << by_status["defect"]
      << ", memory " << by_status["memory"] << ", simulation " << by_status["simulation"] << "\n";
  std::vector<std::pair<std::int64_t, std::string>> common;
  for (const auto& [kind, r] : refusals) common.emplace_back(-r.first, kind);
  std::sort(common.begin(), common.end());
  if (!common.empty()) out << "commonest refusals:\n";
  for (std::size_t i = 0; i < common.size() && i < 5; ++i) {
    const auto& [count, kind] = common[i];
    out << "  " << format_grouped(-count) << " x " << kind << " (e.g. " << refusals[kind].second
        << ")\n";
  }
  const std::vector<SweepEntry> priced = ranked(entries);
  if (priced.empty()) return out.str() + "no plan was simulated\n";
  Columns columns;
  columns.failures = std::any_of(priced.begin(), priced.end(),
                                 [](const SweepEntry& e) { return !e.days_with_failures.empty(); });
  out << "\nfastest " << std::min<std::int64_t>(top, static_cast<std::int64_t>(priced.size()))
      << (columns.failures ? " plans (tokens/s less what failures take):\n"
                           : " plans (tokens/s):\n");
  table_header(out, "rank", columns);
  for (std::int64_t i = 0; i < top && i < static_cast<std::int64_t>(priced.size()); ++i) {
    table_row(out, std::to_string(i + 1), priced[static_cast<std::size_t>(i)], columns);
  }
  out << "\nPareto front (no plan on as many GPUs or fewer has the throughput"
      << (columns.failures ? " with failures" : "") << "):\n";
  table_header(out, "", columns);
  for (const auto& e : pareto_front(entries)) table_row(out, "", e, columns);
  if (deadline_days) deadline_table(out, entries, priced, top, *deadline_days, columns);
  return out.str();
}

}  // namespace trainsim
