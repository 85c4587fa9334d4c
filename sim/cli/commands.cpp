#include "sim/cli/commands.hpp"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "sim/cli/args.hpp"
#include "sim/cli/compare_command.hpp"
#include "sim/cli/list_command.hpp"
#include "sim/cli/outputs.hpp"
#include "sim/cli/scenario_writer.hpp"
#include "sim/cli/sweep_command.hpp"
#include "sim/cli/validate_runs.hpp"
#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/core/files.hpp"
#include "sim/core/format.hpp"
#include "sim/core/hash.hpp"
#include "sim/core/progress.hpp"
#include "sim/core/suggest.hpp"
#include "sim/core/version.hpp"
#include "sim/evaluate/evaluate.hpp"
#include "sim/graph/builder.hpp"
#include "sim/graph/graph_json.hpp"
#include "sim/graph/symmetry.hpp"
#include "sim/memory/memory.hpp"
#include "sim/model/model_writer.hpp"
#include "sim/model/params.hpp"
#include "sim/plan/layout.hpp"
#include "sim/report/memory_curve.hpp"
#include "sim/report/pipeline_svg.hpp"
#include "sim/report/report.hpp"
#include "sim/report/report_html.hpp"
#include "sim/report/trace.hpp"
#include "sim/reshard/layout_spec.hpp"
#include "sim/reshard/reshard.hpp"
#include "sim/search/diagnose.hpp"
#include "sim/validate/validate.hpp"

namespace trainsim {

namespace {

std::vector<InputRecord> input_records(const ResolvedInputs& in) {
  std::vector<InputRecord> records;
  auto add = [&](const char* role, const std::string& name, const std::filesystem::path& path) {
    records.push_back({role, name, sha256_hex(read_text_file(path))});
  };
  if (!in.scenario_path.empty()) add("scenario", in.scenario_name, in.scenario_path);
  if (in.model_path.empty()) {
    records.push_back({"model", in.model.name, sha256_hex(in.model_text)});
  } else {
    add("model", in.model.name, in.model_path);
  }
  add("platform", in.platform.name, in.platform_path);
  if (in.platform.kernel_db) {
    add("kernel_database", in.platform.kernel_db_name, in.platform.kernel_db_path);
  }
  return records;
}

std::optional<std::string> in_out_dir(const RunOptions& opt, const char* name) {
  if (!opt.out_dir) return std::nullopt;
  return (std::filesystem::path(*opt.out_dir) / name).string();
}

// Every file a run (or a check: its scenario alone) writes, by its flag; refused before any work
// when two share a path.
Outputs run_outputs(const RunOptions& opt, const std::string& command) {
  if (opt.out_dir && *opt.out_dir == "-") {
    fail_input("--out", "names a directory for report.json and report.txt; '-' is not one");
  }
  Outputs outputs;
  outputs.add("--save-scenario", opt.save_scenario);
  // A model built from --megatron-args or --nanotron-config is saved beside the scenario.
  const auto& in = opt.inputs;
  if (opt.save_scenario && (in.megatron_args || in.nanotron_config) && !in.model && !in.scenario) {
    if (*opt.save_scenario == "-") {
      fail_input("--save-scenario",
                 std::string("writes the model built from ") +
                     (in.megatron_args ? "--megatron-args" : "--nanotron-config") +
                     " beside the scenario: give a file, not '-'");
    }
    outputs.add("--save-scenario", model_file_beside(*opt.save_scenario));
  }
  if (command != "run") {
    outputs.announce();
    return outputs;
  }
  outputs.add("--out", in_out_dir(opt, "report.json"));
  outputs.add("--out", in_out_dir(opt, "report.txt"));
  outputs.add("--dump-graph", opt.dump_graph);
  outputs.add("--trace", opt.trace);
  outputs.add("--svg", opt.svg);
  outputs.add("--html", opt.html);
  outputs.announce();
  return outputs;
}

// The report: into --out DIR, and on standard output unless an output took it.
void emit(const Report& report, const RunOptions& opt, const Outputs& outputs, std::ostream& out) {
  const std::string json = report_json(report);
  const std::string text = report_text(report);
  if (opt.out_dir) {
    Outputs::write(*in_out_dir(opt, "report.json"), json, out);
    Outputs::write(*in_out_dir(opt, "report.txt"), text, out);
  }
  if (!outputs.to_stdout()) out << (opt.format == "json" ? json : text);
}

// One paragraph per kind of defect: a diagnostic that recurs on other stages with the same fix is
// printed once, the other stages named after it.
void print_grouped(const std::vector<Diagnostic>& diagnostics, std::ostream& out) {
  std::vector<bool> printed(diagnostics.size(), false);
  for (std::size_t i = 0; i < diagnostics.size(); ++i) {
    if (printed[i]) continue;
    const Diagnostic& d = diagnostics[i];
    std::vector<std::int64_t> also;
    for (std::size_t j = i + 1; j < diagnostics.size(); ++j) {
      const Diagnostic& e = diagnostics[j];
      if (!printed[j] && e.id == d.id && e.fix == d.fix && d.stage && e.stage) {
        also.push_back(*e.stage);
        printed[j] = true;
      }
    }
    out << "[" << to_string(d.severity) << "] " << d.id;
    if (d.stage) out << " (stage " << *d.stage << ")";
    out << ": " << d.message << "\n";
    if (!also.empty()) {
      out << "    the same on stage" << (also.size() > 1 ? "s " : " ");
      for (std::size_t k = 0; k < also.size(); ++k) out << (k ? ", " : "") << also[k];
      out << "\n";
    }
    if (!d.fix.empty()) out << "    fix: " << d.fix << "\n";
  }
}

// `check`'s output: every diagnostic with its fix, as text or JSON.
void print_diagnostics(const std::vector<Diagnostic>& diagnostics, const std::string& format,
                       std::ostream& out) {
  if (format == "json") {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& d : diagnostics) {
      j.push_back({{"id", d.id},
                   {"severity", to_string(d.severity)},
                   {"stage", d.stage ? nlohmann::ordered_json(*d.stage) : nullptr},
                   {"message", d.message},
                   {"fix", d.fix}});
    }
    out << nlohmann::ordered_json{{"diagnostics", j}}.dump(2) << "\n";
  } else if (diagnostics.empty()) {
    out << "no diagnostics: the plan looks sound\n";
  } else {
    print_grouped(diagnostics, out);
  }
}

// Each stage's device memory over the step, on one GPU of it (the trace's and the diagram's).
std::vector<std::vector<std::pair<double, double>>> stage_memory_curves(const ResolvedInputs& in,
                                                                        const SimResult& sim,
                                                                        const MemoryModel& memory) {
  const Layout layout(in.plan);
  std::vector<std::vector<std::pair<double, double>>> curves;
  for (std::int64_t s = 0; s < in.plan.pp; ++s) {
    curves.push_back(
        memory_curve(in.plan, in.platform, memory, s,
                     compute_in_start_order(sim.gpu_timeline(layout.stage_leader(s)))));
  }
  return curves;
}

bool has_errors(const std::vector<Diagnostic>& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

// One replay of the plan's step: which GPUs it replays, their task graph and what the engine
// made of it.
struct Replayed {
  ReplayChoice replay;
  TaskGraph graph;
  SimResult sim;
};

Replayed replay_step(const ResolvedInputs& in, const CostModel& costs, const RunOptions& opt,
                     ProgressLine& progress, std::ostream& out) {
  const Topology topology(in.platform, in.plan.world_size());
  ReplayChoice replay = choose_replay(in.plan, costs, topology, in.engine == EngineKind::kSimGrid,
                                      opt.full_simulation);
  progress.phase("building the task graph");
  TaskGraph graph = build_task_graph(in.plan, costs, replay.replay, replay.chains);
  if (opt.dump_graph) {
    Outputs::write(*opt.dump_graph, task_graph_to_json(graph).dump() + "\n", out);
  }
  EngineOptions engine_options;
  engine_options.compute_slowdown = in.platform.overlap.compute_slowdown;
  engine_options.keep_timelines = opt.trace || opt.svg || opt.html;
  engine_options.list_collectives = true;
  ProgressCounter replayed;
  engine_options.progress = &replayed;
  progress.phase(in.engine == EngineKind::kSimGrid ? "replaying the step on SimGrid, ops"
                                                   : "replaying the step, ops",
                 &replayed);
  SimResult sim = simulate(graph, topology, in.engine, engine_options);
  return {std::move(replay), std::move(graph), std::move(sim)};
}

// `trainsim run` once the plan is costed: replay the step, then write the trace, the diagram,
// the report with its diagnostics and priced fixes, and the page.
int run_plan(const ResolvedInputs& in, const Partition& partition, const CostModel& costs,
             const RunOptions& opt, const Outputs& outputs, ProgressLine& progress,
             std::ostream& out) {
  const Replayed r = replay_step(in, costs, opt, progress, out);
  progress.phase("writing the outputs");
  // The memory timeline the trace's counter and the page's curves follow.
  const std::optional<MemoryModel> memory =
      opt.trace || opt.html
          ? std::optional(compute_memory(in.model, in.platform, in.plan, partition, costs))
          : std::nullopt;
  if (opt.trace) {
    Outputs::write(*opt.trace,
                   trace_json({in.plan, in.platform, partition, costs, r.graph, r.sim, *memory}),
                   out);
  }
  const std::string diagram =
      opt.svg || opt.html
          ? pipeline_svg(in.plan, r.sim, pipeline_title(in.plan, in.model.name, in.platform.name))
          : std::string();
  if (opt.svg) Outputs::write(*opt.svg, diagram, out);
  // Fixes are priced with the analytic engine and the symmetric replay where the layout allows
  // it (evaluate()). A run on that engine without --full-simulation is that same simulation of
  // the plan, so its step time is the baseline; SimGrid's (contention) or the full replay's is
  // not, and the plan space then prices the baseline itself: fixes compare like with like.
  const bool same_simulator = in.engine == EngineKind::kAnalytic && !opt.full_simulation;
  progress.phase("diagnosing the plan and pricing fixes");
  const std::vector<Diagnostic> diagnostics =
      diagnose(in.model, in.platform, in.plan, partition, costs, {},
               same_simulator ? std::optional<double>(r.sim.step_time_s) : std::nullopt);
  ReportInputs ri{in.model,     in.platform,      in.plan,           partition,   costs,
                  r.sim,        in.scenario_name, input_records(in), diagnostics, r.replay.why_full,
                  in.published, in.budget};
  const Report report = make_report(ri);
  if (opt.html) {
    Outputs::write(*opt.html,
                   report_html({report, diagram, stage_memory_curves(in, r.sim, *memory)}), out);
  }
  emit(report, opt, outputs, out);
  return opt.strict && has_errors(diagnostics) ? kExitDiagnostics : kExitOk;
}

int run_or_check(const std::string& command, const std::vector<std::string>& args,
                 std::ostream& out, std::ostream& err) {
  RunOptions opt = parse_run_options(command, args);
  if (opt.help) {
    out << run_help(command);
    return kExitOk;
  }
  const Outputs outputs = run_outputs(opt, command);
  ProgressLine progress;
  progress.phase("reading the inputs");
  ResolvedInputs in = resolve_inputs(opt.inputs);
  for (const auto& note : in.notes) err << "trainsim: " << note << "\n";
  if (opt.save_scenario) {
    const std::string& path = *opt.save_scenario;
    std::string from = "trainsim " + command;
    for (const auto& a : args) from += " " + a;
    if (in.model_path.empty()) {
      Outputs::write(model_file_beside(path), model_json(in.model).dump(2) + "\n", out);
    }
    Outputs::write(path, scenario_of(in, from, path).dump(2) + "\n", out);
  }
  progress.phase("costing the plan");
  const Partition partition = build_partition(in.model, in.platform, in.plan, in.origin);
  const CostModel costs = compute_costs(in.model, in.platform, in.plan, partition);
  if (command == "run") return run_plan(in, partition, costs, opt, outputs, progress, out);
  progress.phase("checking the plan");
  const auto diagnostics = diagnose(in.model, in.platform, in.plan, partition, costs);
  if (!outputs.to_stdout()) print_diagnostics(diagnostics, opt.format, out);
  return has_errors(diagnostics) ? kExitDiagnostics : kExitOk;
}

int validate_command(const std::vector<std::string>& args, std::ostream& out) {
  const ValidateOptions opt = parse_validate_options(args);
  if (opt.help) {
    out << validate_help();
    return kExitOk;
  }
  // Each reference set on the platform it was measured on, unless --platform names one.
  auto platform_for = [&opt](const std::filesystem::path& reference) {
    const std::string name = opt.platform.value_or(reference_platform(reference));
    return load_platform(resolve_catalog_entry("platforms", name, "--platform"));
  };
  std::vector<ValidationSet> sets;
  auto add = [&](const std::filesystem::path& ref) {
    for (auto& set : validate_reference(ref, platform_for(ref))) sets.push_back(std::move(set));
  };
  if (opt.references.empty()) add(default_reference());
  std::vector<std::string> scenarios;  // one's own measured runs, after the reference sets
  for (const auto& ref : opt.references) {
    std::error_code ec;
    if (names_scenarios(ref)) {
      scenarios.push_back(ref);
    } else if (std::filesystem::is_regular_file(ref, ec)) {
      add(ref);
    } else {
      fail_input(ref, "no such file, folder of scenarios or catalog scenario");
    }
  }
  if (!scenarios.empty()) {
    for (auto& set : validate_scenarios(scenarios, opt.platform, opt.jobs))
      sets.push_back(std::move(set));
  }
  const std::string text = opt.format == "json" ? validation_json(sets) : validation_markdown(sets);
  Outputs outputs;
  outputs.add("--out", opt.out);
  outputs.announce();
  if (opt.out) Outputs::write(*opt.out, text, out);
  if (!outputs.to_stdout()) out << text;
  return kExitOk;
}

// `trainsim reshard`: both layouts checked like a run's plan, then shards, checks and the plan.
int reshard_command(const std::vector<std::string>& args, std::ostream& out) {
  const ReshardOptions opt = parse_reshard_options(args);
  if (opt.help) {
    out << reshard_help();
    return kExitOk;
  }
  for (const auto& [flag, value] :
       {std::pair{"--model", &opt.model}, {"--from", &opt.from}, {"--to", &opt.to}}) {
    if (!*value) fail_input(flag, "is required (see trainsim reshard --help)");
  }
  const Model model = load_model(resolve_catalog_entry("models", *opt.model, "--model"));
  const Platform platform =
      load_platform(resolve_catalog_entry("platforms", opt.platform, "--platform"));
  Plan base;
  std::map<std::string, std::string> flags;
  if (opt.framework) flags["framework"] = *opt.framework;
  if (opt.vocab_divisible_by) flags["vocab_divisible_by"] = *opt.vocab_divisible_by;
  apply_plan_flags(base, flags);
  base.partition = framework_partition_rule(base.effective_framework());
  const Plan from = parse_layout(*opt.from, "--from", base);
  validate_layout(from, model, platform, "--from");
  const Plan to = parse_layout(*opt.to, "--to", base);
  validate_layout(to, model, platform, "--to");
  std::optional<std::filesystem::path> checkpoint;
  if (opt.checkpoint) checkpoint = *opt.checkpoint;
  const ReshardResult result = reshard(model, platform, from, to, checkpoint);
  out << (opt.format == "json" ? reshard_json(result) : reshard_text(result));
  return result.has_errors() ? kExitDiagnostics : kExitOk;
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    if (args.empty()) {
      fail_input("trainsim",
                 "needs a command: run, check, compare, validate, reshard, sweep or "
                 "list (see trainsim --help)");
    }
    const bool help = args[0] == "--help" || args[0] == "-h" || args[0] == "help";
    // "trainsim help run" is "trainsim run --help".
    if (help && args.size() == 2) return run_cli({args[1], "--help"}, out, err);
    if (help) {
      if (args.size() > 1) fail_input(args[0], "takes no arguments besides a command's name");
      out << top_help();
      return kExitOk;
    }
    if (args[0] == "--version") {
      if (args.size() > 1) fail_input("--version", "takes no arguments");
      out << "trainsim " << version() << "\n";
      return kExitOk;
    }
    const std::string command = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (command == "run" || command == "check") return run_or_check(command, rest, out, err);
    if (command == "validate") return validate_command(rest, out);
    if (command == "reshard") return reshard_command(rest, out);
    if (command == "sweep") return sweep_command(rest, out, err);
    if (command == "compare") return compare_command(rest, out);
    if (command == "list") return list_command(rest, out);
    fail_input("trainsim", "unknown command '" + command + "'" +
                               did_you_mean(command, {"run", "check", "compare", "validate",
                                                      "reshard", "sweep", "list"}) +
                               " (commands: run, check, compare, validate, reshard, sweep, list; "
                               "see trainsim --help)");
  } catch (const InputError& e) {
    err << "trainsim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    err << "trainsim: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace trainsim
