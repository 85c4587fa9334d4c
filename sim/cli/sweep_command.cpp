#include "sim/cli/sweep_command.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>

#include "sim/cli/budget_flags.hpp"
#include "sim/cli/command_line.hpp"
#include "sim/cli/outputs.hpp"
#include "sim/cli/sweep_contention.hpp"
#include "sim/cli/sweep_platform_flag.hpp"
#include "sim/cli/sweep_spec.hpp"
#include "sim/cli/sweep_workers.hpp"
#include "sim/core/build_id.hpp"
#include "sim/core/catalog.hpp"
#include "sim/core/error.hpp"
#include "sim/core/files.hpp"
#include "sim/core/format.hpp"
#include "sim/core/hash.hpp"
#include "sim/core/interrupt.hpp"
#include "sim/core/version.hpp"
#include "sim/sweep/sweep_chart.hpp"
#include "sim/sweep/sweep_csv.hpp"
#include "sim/sweep/sweep_summary.hpp"

namespace trainsim {

namespace {

// --shard K/N: plans K-1, K-1+N, ... of the sweep.
void set_shard(SweepOptions& o, const std::string& flag, const std::string& v) {
  const auto slash = v.find('/');
  if (slash == std::string::npos) fail_input(flag, "must be K/N (1 <= K <= N), got '" + v + "'");
  const auto k = positive_value(flag, v.substr(0, slash));
  o.shards = positive_value(flag, v.substr(slash + 1));
  if (k > o.shards) fail_input(flag, "must be K/N with K <= N, got '" + v + "'");
  o.shard = k - 1;
}

std::int64_t simgrid_top_of(const std::string& flag, const std::string& v) {
  if (v == "0") return 0;
  if (v.empty() || v[0] == '-') {
    fail_input(flag, "must be 0 (no replay) or a positive integer, got '" + v + "'");
  }
  return positive_value(flag, v);
}

// What the options must hold together, checked before any plan runs.
void check_sweep_options(const SweepOptions& o, bool merging) {
  if (!o.out) fail_input("--out", "is required: the CSV file to write");
  if (*o.out == "-") {
    fail_input("--out", "needs a file, not '-': rows go to FILE.part as they come, for a rerun");
  }
  std::error_code ec;  // refused now, not once every plan has run
  if (std::filesystem::is_directory(*o.out, ec)) {
    fail_input("--out", *o.out + " is a directory; name the CSV file to write");
  }
  if (o.svg && *o.svg == "-") fail_input("--svg", "needs a file, not '-': stdout has the summary");
  if (merging && o.merge.empty()) fail_input("--merge", "needs the shard files to join");
  if (merging && o.platforms) {
    fail_input("--platform",
               "chooses where a sweep file's plans are priced; --merge joins "
               "shards already priced");
  }
  if (!merging && !o.file) fail_input("SWEEP", "is required: a sweep file (see --help)");
}

// The header and the rows in plan order, written atomically; the summary of what it holds.
std::vector<SweepEntry> finish(const std::filesystem::path& out,
                               const std::map<std::int64_t, std::string>& rows) {
  std::string csv = sweep_csv_header();
  std::vector<std::string> lines;
  for (const auto& [index, line] : rows) {
    csv += line;
    lines.push_back(line.substr(0, line.size() - 1));
  }
  write_expected_output(out, csv);
  return sweep_entries(lines);
}

// What a partial file's rows were computed from: the sweep file, the model, platform and kernel
// database files, trainsim's version and build (its GNU build id: another build may price a plan
// otherwise under the same version) and the CSV's columns, the fixed plan fields and GPU counts
// (a base scenario's among them), the budget and the shard.
std::string fingerprint(const SweepContext& c, const SweepOptions& o) {
  std::string all = read_text_file(c.spec.file) + '\0' + read_text_file(c.spec.model) + '\0' +
                    std::string(version()) + '\0' + build_id() + '\0' + sweep_csv_header();
  for (const auto& [field, value] : c.spec.fixed) all += '\0' + field + '=' + value;
  for (const std::int64_t g : c.spec.gpus) all += '\0' + std::to_string(g);
  for (std::size_t i = 0; i < c.platforms.size(); ++i) {
    all += '\0' + read_text_file(c.spec.platforms[i].file) + '\0' + budget_text(c.budgets[i]);
    const Platform& p = c.platforms[i];
    if (!p.kernel_db_path.empty()) all += '\0' + read_text_file(p.kernel_db_path);
  }
  const std::string shard = std::to_string(o.shard) + "/" + std::to_string(o.shards);
  return sha256_hex(all + '\0' + shard);
}

// What the chart draws: days against GPU-hours, or against cost where the plans span platforms
// of different prices.
std::string chart_axes(const std::vector<SweepEntry>& entries) {
  return std::string("days against ") + (ranked_by_cost(entries) ? "cost" : "GPU-hours");
}

// "llama3.1-70b on h100-sxm-ndr and h200-sxm-ndr, FILE: days against cost": the chart's title.
std::string chart_title(const SweepSpec& spec, const std::vector<SweepEntry>& entries) {
  return spec.model.stem().string() + " on " + platform_names(spec) + ", " +
         spec.file.stem().string() + ": " + chart_axes(entries);
}

// Resume: the whole rows a previous run of this same sweep (`fingerprint`) left in `part`, kept
// there without the line it was cut in; InputError where `part` holds another sweep's rows.
std::map<std::int64_t, std::string> resume_rows(const std::filesystem::path& part,
                                                const std::string& fingerprint) {
  const std::string mark = "# trainsim sweep " + fingerprint + "\n";
  std::map<std::int64_t, std::string> done = read_rows(part);
  std::error_code ec;
  if (std::filesystem::exists(part, ec) && !read_text_file(part).starts_with(mark)) {
    fail_input(part.string(),
               "holds rows of another sweep (another sweep file, model, platform, kernel database, "
               "trainsim build, token budget, price or shard); remove it to start again");
  }
  std::string kept = mark;
  for (const auto& [index, line] : done) kept += line;
  write_file_atomically(part, kept);
  return done;
}

// The CSV and the chart: two different files, each named to the interrupt handler.
void announce_outputs(const SweepOptions& o) {
  Outputs outputs;
  outputs.add("--out", o.out);
  outputs.add("--svg", o.svg);
  outputs.announce();
}

// The time-against-cost chart where --svg asks for it; the plans must have days to draw.
void write_chart(const SweepOptions& o, const std::vector<SweepEntry>& entries,
                 std::optional<double> deadline, const std::string& title) {
  if (!o.svg) return;
  const auto svg = sweep_svg(entries, deadline, title);
  if (!svg) {
    fail_input("--svg",
               "has nothing to draw: no plan has days that end (a token budget, and a "
               "job that finishes despite its failures)");
  }
  write_expected_output(*o.svg, *svg);
}

int merge_shards(const SweepOptions& o, std::ostream& out) {
  announce_outputs(o);
  std::map<std::int64_t, std::string> rows;
  for (const auto& file : o.merge) {
    const std::string text = read_text_file(file);
    if (!text.starts_with(sweep_csv_header())) {
      fail_input(file, "is not a sweep CSV of this version (its header differs)");
    }
    for (auto& [index, line] : read_rows(file)) {
      if (!rows.emplace(index, line).second) {
        fail_input(file, "holds plan " + std::to_string(index) + " again (shards overlap)");
      }
    }
  }
  const std::vector<SweepEntry> entries = finish(*o.out, rows);
  out << sweep_summary(entries, o.top.value_or(10), o.deadline_days);
  write_chart(o, entries, o.deadline_days, "merged sweep: " + chart_axes(entries));
  out << "merged " << rows.size() << " rows from " << o.merge.size() << " files into " << *o.out
      << "\n";
  return 0;
}

}  // namespace

namespace {

// sweep's flags: what parses them and what --help lists.
boost::program_options::options_description sweep_flags() {
  namespace po = boost::program_options;
  auto text = [](const char* name) { return po::value<std::string>()->value_name(name); };
  po::options_description d("Flags", kHelpWidth, kHelpDescriptionWidth);
  d.add_options()("help,h", "show this help")(
      "out", text("FILE.csv"),
      "the CSV; rows go to FILE.csv.part as they come, and a rerun after a kill resumes from it; "
      "FILE.csv appears, in plan order, when every plan is done")("jobs", text("N"),
                                                                  "worker processes (default 1)")(
      "shard", text("K/N"),
      "only plans K-1, K-1+N, ... (a batch array's task K of N); join the shards' CSVs with "
      "--merge: the result equals the unsharded run's file byte for byte")(
      "merge", po::bool_switch(), "join the shard CSVs named (instead of a sweep file)")(
      "top", text("N"), "plans in the ranking (default: the file's \"top\", else 10)")(
      "deadline-days", text("D"),
      "with a token budget: also list the plans that finish within D days (with failures, given "
      "a GPU MTBF), fewest GPU-hours first: the cheapest way to meet a deadline (the file's "
      "\"deadline_days\")")("svg", text("FILE.svg"),
                            "with a token budget: a chart of every plan that finishes, its "
                            "days (with failures) against its GPU-hours, coloured by GPU "
                            "count, the deadline drawn and its cheapest plan ringed")(
      "simgrid-top", text("N"),
      "replay the N fastest plans (as ranked) on SimGrid, where flows share links, beside their "
      "analytic step (default 3; 0: none)")(
      "platform", text("P[=PRICE],..."),
      "price every plan on these platforms instead of the file's \"platform\" (catalog names or "
      "paths, comma-separated), each at its own price per GPU-hour where given (all or none; "
      "else the file's price for it): --platform h100-sxm-ndr=2.5,h200-sxm-ndr=3.5");
  d.add(budget_options("The budget's flags: over the sweep file's keys of the same names"));
  return d;
}

}  // namespace

SweepOptions parse_sweep_options(const std::vector<std::string>& args) {
  const boost::program_options::variables_map vm =
      parse_command_line("sweep", args, sweep_flags(), "sweep");
  SweepOptions o;
  o.help = vm.count("help") > 0;
  o.out = path_of(vm, "out");
  o.jobs = positive_of(vm, "jobs").value_or(o.jobs);
  if (const auto v = string_of(vm, "shard")) set_shard(o, "--shard", *v);
  o.budget = budget_of(vm);
  o.top = positive_of(vm, "top");
  if (const auto v = string_of(vm, "deadline-days")) {
    o.deadline_days = real_flag("--deadline-days", *v, kDeadlineDaysRange);
  }
  o.svg = path_of(vm, "svg");
  o.platforms = string_of(vm, "platform");
  if (const auto v = string_of(vm, "simgrid-top"))
    o.simgrid_top = simgrid_top_of("--simgrid-top", *v);
  const bool merging = vm["merge"].as<bool>();
  std::vector<std::string> files = strings_of(vm, "sweep");
  if (merging) {
    o.merge = std::move(files);
  } else if (files.size() > 1) {
    fail_input(files[1], "one sweep file only (see trainsim sweep --help)");
  } else if (!files.empty()) {
    o.file = files.front();
  }
  if (!o.help) check_sweep_options(o, merging);
  return o;
}

std::string sweep_help() {
  std::ostringstream o;
  o << "usage: trainsim sweep SWEEP.json|NAME --out FILE.csv [--jobs N] [--shard K/N]\n"
       "                      [--tokens T] [--price-per-gpu-hour P] [--gpu-mtbf-hours H]\n"
       "                      [--checkpoint-s C] [--restart-s R] [--top N] [--deadline-days D]\n"
       "                      [--svg FILE.svg] [--simgrid-top N]\n"
       "       trainsim sweep --merge SHARD.csv ... --out FILE.csv [--top N] [--deadline-days "
       "D]\n\n"
       "Enumerates every plan of a sweep file (GPU counts x the lists of values under \"vary\",\n"
       "the fields under \"plan\" fixed; with \"scenario\": FILE|NAME, from that scenario's\n"
       "model, platform, plan fields but dp, and GPU count, the file's own keys over them),\n"
       "refuses those a rule, a partition defect or memory\n"
       "rules out (counting each reason), simulates the rest on the analytic engine and\n"
       "writes one CSV row per plan: every plan field, status and reason, step time with its\n"
       "P10/P90, tokens/s, model TFLOP/s per GPU, MFU, peak memory per GPU, the detectors'\n"
       "findings and, with a token budget, days, GPU-hours and cost to train. Prints the\n"
       "refusals, the fastest plans and the Pareto front of throughput against GPU count\n"
       "(with --gpu-mtbf-hours, the throughput failures leave: tokens/s x (1 - the share\n"
       "of the days they take), so that a plan ranks by its days with failures). With the\n"
       "budget's flags each plan's days, GPU-hours and cost, and with --gpu-mtbf-hours its\n"
       "days with failures, the share they lose and the GPU-hours and cost with them\n"
       "(columns days_with_failures, lost_to_failures, gpu_hours_with_failures,\n"
       "cost_with_failures). A plan that a varied field leaves as another row's (sp at\n"
       "tp 1 beside sp false, cp_comm_type at cp 1) is status \"same\", priced once, in the\n"
       "row its reason names.\n\n"
    << sweep_flags()
    << "\nSweep file: {\"model\": name or path, \"platform\": name or path (default\n"
       "h100-sxm-ndr), \"gpus\": N or [N, ...], \"plan\": {field: value}, \"vary\": {field:\n"
       "[values]}, \"tokens\", \"price_per_gpu_hour\", \"gpu_mtbf_hours\", \"checkpoint_s\",\n"
       "\"restart_s\", \"top\", \"deadline_days\"}; fields as a scenario's \"plan\"\n"
       "names them. Without dp, each plan's dp is the GPUs left over by tp x cp x pp.\n"
       "Several platforms: \"platform\": [\"h100-sxm-ndr\", \"h200-sxm-ndr\"], each plan priced\n"
       "on each (the CSV's platform column, the tables' labels), and \"price_per_gpu_hour\":\n"
       "{\"h100-sxm-ndr\": 2.5, \"h200-sxm-ndr\": 3.5} for a price each (--price-per-gpu-hour\n"
       "sets one for all); a deadline's plans are then ranked by cost.\n";
  return o.str();
}

int sweep_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const SweepOptions o = parse_sweep_options(args);
  if (o.help) {
    out << sweep_help();
    return 0;
  }
  if (!o.merge.empty()) return merge_shards(o, out);
  SweepSpec spec = load_sweep_spec(resolve_catalog_entry(kSweepsFolder, *o.file, "SWEEP"));
  if (o.platforms) {
    spec.platforms = flag_platforms(*o.platforms, spec, o.budget.price_per_gpu_hour.has_value());
  }
  const Model model = load_model(spec.model);
  const TrainingBudget budget = over(o.budget, spec.budget);
  const SweepContext context =
      sweep_context(spec, model, budget, o.budget.price_per_gpu_hour.has_value());
  const std::optional<double> deadline = o.deadline_days ? o.deadline_days : spec.deadline_days;
  if (deadline && !budget.tokens) {
    fail_without_tokens(o.deadline_days ? "--deadline-days"
                                        : spec.file.string() + ": $.deadline_days");
  }
  if (o.svg && !budget.tokens) {
    fail_input("--svg",
               "draws days against GPU-hours: give --tokens too (or the file's "
               "\"tokens\")");
  }
  const std::filesystem::path csv = *o.out;
  const std::filesystem::path part = csv.string() + ".part";
  announce_outputs(o);
  set_interrupt_note("the plans done are kept in " + part.string() + ": rerun to resume");
  const std::map<std::int64_t, std::string> done = resume_rows(part, fingerprint(context, o));
  std::vector<std::int64_t> todo;
  std::int64_t total = 0;
  for (std::int64_t i = o.shard; i < sweep_size(spec); i += o.shards) {
    ++total;
    if (!done.contains(i)) todo.push_back(i);
  }
  if (!done.empty())
    err << "sweep: resuming, " << done.size() << " plans already in " << part.string() << "\n";
  {
    PartialFile file(part);
    Progress progress(err, total, total - static_cast<std::int64_t>(todo.size()));
    run_workers(context, todo,
                std::min<std::int64_t>(o.jobs, std::max<std::size_t>(todo.size(), 1)), file,
                progress);
  }
  std::map<std::int64_t, std::string> rows = read_rows(part);
  const std::vector<SweepEntry> entries = finish(csv, rows);
  out << sweep_summary(entries, o.top.value_or(spec.top), deadline);
  write_chart(o, entries, deadline, chart_title(spec, entries));
  out << simgrid_replays(context, ranked(entries), o.simgrid_top);
  std::filesystem::remove(part);
  return 0;
}

}  // namespace trainsim
