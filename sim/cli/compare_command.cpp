#include "sim/cli/compare_command.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>

#include "sim/check/detect.hpp"
#include "sim/cli/outputs.hpp"
#include "sim/cli/scenario.hpp"
#include "sim/core/error.hpp"
#include "sim/core/files.hpp"
#include "sim/core/format.hpp"
#include "sim/core/percent.hpp"
#include "sim/core/units.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/memory/memory.hpp"
#include "sim/plan/plan_schema.hpp"
#include "sim/report/pipeline_svg.hpp"

namespace trainsim {

namespace {

struct Column {
  std::string label;
  ResolvedInputs in;
  Report report;
  SimResult sim;
  std::vector<std::string> errors;  // error-level diagnostics but oom (the fits row says that)
};

// The column's error-level findings, detected only (compare prices no fixes): a plan that drops
// layers or runs a batch its framework would refuse reads as an ordinary column otherwise.
std::vector<std::string> error_ids(const ResolvedInputs& in, const Partition& partition,
                                   const CostModel& costs) {
  const std::vector<double> times = stage_times(in.platform, in.plan, costs);
  std::vector<std::string> ids;
  for (const Finding& f : detect({in.model, in.platform, in.plan, partition, costs, times, {}})) {
    const Diagnostic& d = f.diagnostic;
    if (d.severity != Severity::kError || d.id == "oom") continue;
    if (std::find(ids.begin(), ids.end(), d.id) == ids.end()) ids.push_back(d.id);
  }
  return ids;
}

Column simulate_column(const std::string& label, const InputRequest& request) {
  ResolvedInputs in = resolve_inputs(request);
  const Partition partition = build_partition(in.model, in.platform, in.plan, in.origin);
  const CostModel costs = compute_costs(in.model, in.platform, in.plan, partition);
  EngineOptions options;
  options.keep_timelines = true;
  SimResult sim = replay_with(in.platform, in.plan, costs, in.engine, options);
  Report report = make_report({in.model,
                               in.platform,
                               in.plan,
                               partition,
                               costs,
                               sim,
                               in.scenario_name,
                               {},
                               {},
                               {},
                               {},
                               in.budget});
  std::vector<std::string> errors = error_ids(in, partition, costs);
  return {label, std::move(in), std::move(report), std::move(sim), std::move(errors)};
}

double peak_bytes(const Report& r, bool unfragmented = false) {
  double peak = 0;
  for (const auto& s : r.stages) {
    peak = std::max(peak, unfragmented ? s.peak_unfragmented_bytes : s.peak_memory_bytes);
  }
  return peak;
}

// How the fullest stage's peak fits the GPU.
MemoryFit fit(const Column& c) {
  return memory_fit(peak_bytes(c.report), peak_bytes(c.report, true),
                    c.in.platform.gpu.memory_bytes);
}

double exposed(const Report& r) {
  double t = 0;
  for (double e : r.exposed_comm_s) t += e;
  return t;
}

nlohmann::ordered_json columns_json(const std::vector<Column>& columns) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const Column& c : columns) {
    const Report& r = c.report;
    j.push_back({{"label", c.label},
                 {"model", r.model},
                 {"platform", r.platform},
                 {"gpus", r.gpus},
                 {"plan", plan_json(r.plan)},
                 {"sequences_per_step", r.plan.sequences_per_step()},
                 {"step_time_s", r.step_time_s},
                 {"tokens_per_s", r.tokens_per_s},
                 {"mfu", r.mfu},
                 {"bubble_fraction", r.bubble_fraction},
                 {"exposed_comm_s", exposed(r)},
                 {"peak_memory_bytes", std::llround(peak_bytes(r))},
                 {"fits", fit(c) == MemoryFit::kFits},
                 {"fits_unfragmented", fit(c) != MemoryFit::kOver},
                 {"errors", c.errors}});
    if (r.time_to_train) {
      j.back()["time_to_train_s"] = r.time_to_train->seconds;
      j.back()["gpu_hours"] = r.time_to_train->gpu_hours;
      if (r.time_to_train->cost) j.back()["cost"] = *r.time_to_train->cost;
      if (const auto& f = r.time_to_train->failures) {
        j.back()["finishes_with_failures"] = f->finishes;
        if (f->finishes) {
          j.back()["time_with_failures_s"] = f->seconds;
          j.back()["lost_to_failures"] = f->lost;
        }
      }
    }
  }
  return j;
}

// What the idle row is called: each report's name for its idle share where the columns agree
// (the pipeline bubble, or idle: waits on other GPUs), both where they differ.
std::string idle_row_name(const std::vector<Column>& columns) {
  const std::string first = columns.front().report.idle_name();
  for (const Column& c : columns) {
    if (c.report.idle_name() != first) return "pipeline bubble / idle";
  }
  return first;
}

// The time to train with failures and the share they lose, where a GPU MTBF is given.
void add_failure_rows(const std::vector<Column>& columns,
                      std::vector<std::vector<std::string>>& rows) {
  const auto failures = [](const Column& c) -> const FailureCost* {
    const auto& t = c.report.time_to_train;
    return t && t->failures ? &*t->failures : nullptr;
  };
  if (std::none_of(columns.begin(), columns.end(), failures)) return;
  std::vector<std::string> days = {"with failures"}, lost = {"lost to failures"};
  for (const Column& c : columns) {
    const FailureCost* f = failures(c);
    days.push_back(!f ? "-" : f->finishes ? format_duration(f->seconds) : "never");
    lost.push_back(f && f->finishes ? format_percent(f->lost) : "-");
  }
  rows.push_back(std::move(days));
  rows.push_back(std::move(lost));
}

// Rows for the columns' token budget (and price), only where one is given ("-" for a column
// without: all take the flags, and a scenario column may give its own).
void add_time_to_train_rows(const std::vector<Column>& columns,
                            std::vector<std::vector<std::string>>& rows) {
  const bool any = std::any_of(columns.begin(), columns.end(),
                               [](const Column& c) { return c.report.time_to_train.has_value(); });
  if (!any) return;
  const bool priced = std::any_of(columns.begin(), columns.end(), [](const Column& c) {
    return c.report.time_to_train && c.report.time_to_train->cost;
  });
  std::vector<std::string> days = {"time to train"}, hours = {"GPU-hours"}, cost = {"cost"};
  for (const Column& c : columns) {
    const auto& t = c.report.time_to_train;
    days.push_back(t ? format_duration(t->seconds) : "-");
    hours.push_back(t ? format_whole(t->gpu_hours) : "-");
    cost.push_back(t && t->cost ? format_whole(*t->cost) : "-");
  }
  rows.push_back(std::move(days));
  rows.push_back(std::move(hours));
  if (priced) rows.push_back(std::move(cost));
  add_failure_rows(columns, rows);
}

// Rows naming each column's model and platform, under the labels, only where columns differ in
// them.
void add_input_rows(const std::vector<Column>& columns,
                    std::vector<std::vector<std::string>>& rows) {
  std::vector<std::vector<std::string>> differing;
  for (const std::string name : {"model", "platform"}) {
    std::vector<std::string> row = {name};
    for (const Column& c : columns) {
      row.push_back(name == "model" ? c.report.model : c.report.platform);
    }
    if (std::adjacent_find(row.begin() + 1, row.end(), std::not_equal_to<>()) != row.end()) {
      differing.push_back(std::move(row));
    }
  }
  rows.insert(rows.begin() + 1, differing.begin(), differing.end());
}

std::string columns_text(const std::vector<Column>& columns) {
  // The batch each step trains: a scenario without "gbs" runs mbs x dp sequences, so columns
  // with another dp or mbs step over another batch (compare tokens/s then, not the step).
  std::vector<std::vector<std::string>> rows = {{""},
                                                {"GPUs"},
                                                {"sequences/step"},
                                                {"step time (s)"},
                                                {"tokens/s"},
                                                {"MFU"},
                                                {idle_row_name(columns)},
                                                {"exposed comm (s)"},
                                                {"peak memory (GiB)"},
                                                {"fits"}};
  for (const Column& c : columns) {
    const Report& r = c.report;
    rows[0].push_back(c.label);
    rows[1].push_back(format_grouped(r.gpus));
    rows[2].push_back(format_grouped(r.plan.sequences_per_step()));
    rows[3].push_back(format_fixed(r.step_time_s, 3));
    rows[4].push_back(format_grouped(std::llround(r.tokens_per_s)));
    rows[5].push_back(format_percent(r.mfu));
    rows[6].push_back(format_percent(r.bubble_fraction));
    rows[7].push_back(format_fixed(exposed(r), 3));
    rows[8].push_back(format_fixed(peak_bytes(r) / kGiB, 2));
    rows[9].emplace_back(to_string(fit(c)));
  }
  add_input_rows(columns, rows);
  add_time_to_train_rows(columns, rows);
  const bool any_errors = std::any_of(columns.begin(), columns.end(),
                                      [](const Column& c) { return !c.errors.empty(); });
  if (any_errors) {  // a row only where a plan has one: `trainsim check` says what and why
    rows.push_back({"errors"});
    for (const Column& c : columns)
      rows.back().push_back(c.errors.empty() ? "none" : join(c.errors, ", "));
  }
  std::vector<std::size_t> widths(columns.size() + 1, 0);
  for (const auto& row : rows) {
    for (std::size_t k = 0; k < row.size(); ++k) widths[k] = std::max(widths[k], row[k].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (std::size_t k = 0; k < row.size(); ++k) {
      out += k == 0 ? pad_right(row[k], widths[k]) : "  " + pad_right(row[k], widths[k]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  }
  return out;
}

std::string columns_html(const std::vector<Column>& columns) {
  double axis = 0;
  for (const Column& c : columns) axis = std::max(axis, c.report.step_time_s);
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>trainsim "
      "compare</title>\n<style>body{font-family:sans-serif;margin:24px}pre{font-size:13px}"
      ".scroll{overflow-x:auto}</style>\n</head>\n<body>\n<h1>trainsim compare</h1>\n<pre>";
  page += escape_markup(columns_text(columns));
  page += "</pre>\n<h2>Pipelines, on one time axis</h2>\n";
  for (const Column& c : columns) {
    page +=
        "<div class=\"scroll\">\n" +
        pipeline_svg(
            c.in.plan, c.sim,
            c.label + ": " + pipeline_title(c.in.plan, c.in.model.name, c.in.platform.name), axis) +
        "</div>\n";
  }
  return page + "</body>\n</html>\n";
}

}  // namespace

int compare_command(const std::vector<std::string>& args, std::ostream& out) {
  const CompareOptions opt = parse_compare_options(args);
  if (opt.help) {
    out << compare_help();
    return 0;
  }
  Outputs outputs;
  outputs.add("--html", opt.html);
  outputs.announce();
  std::vector<Column> columns;
  const auto request = [&](const std::string& scenario) {
    InputRequest r;
    r.scenario = scenario;
    r.engine = opt.engine;
    r.budget = opt.budget;
    return r;
  };
  for (const auto& s : opt.scenarios) {
    // A catalog name is its own column name ("llama3.1-70b-64gpu", whose ".1-..." is no
    // extension); a path loses its folders and ".json".
    const std::filesystem::path path(s);
    const std::string name =
        path.extension() == ".json" ? path.stem().string() : path.filename().string();
    columns.push_back(simulate_column(name, request(s)));
  }
  for (const auto& set : opt.sets) {
    InputRequest r = request(opt.scenarios.front());
    ColumnChange change = parse_set(set);
    r.plan_flags = std::move(change.plan_flags);
    r.model = std::move(change.model);
    r.platform = std::move(change.platform);
    try {
      columns.push_back(simulate_column(set, r));
    } catch (const InputError& e) {  // "--tp: must divide ..." of a flag given as --set tp=3
      fail_input("--set " + set, e.what());
    }
  }
  if (opt.html) Outputs::write(*opt.html, columns_html(columns), out);
  if (outputs.to_stdout()) return 0;
  if (opt.format == "json") {
    out << columns_json(columns).dump(2) << "\n";
  } else {
    out << columns_text(columns);
  }
  return 0;
}

}  // namespace trainsim
