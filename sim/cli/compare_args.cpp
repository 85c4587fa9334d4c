#include "sim/cli/compare_args.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <sstream>

#include "sim/cli/budget_flags.hpp"
#include "sim/cli/command_line.hpp"
#include "sim/core/error.hpp"
#include "sim/core/format.hpp"
#include "sim/core/suggest.hpp"
#include "sim/plan/plan_schema.hpp"

namespace trainsim {

namespace {

// compare's flags: what parses them and what --help lists.
boost::program_options::options_description compare_flags() {
  namespace po = boost::program_options;
  po::options_description d("Flags", kHelpWidth, kHelpDescriptionWidth);
  d.add_options()("help,h", "show this help")(
      "set", po::value<std::vector<std::string>>()->value_name("KEY=VALUE,..."),
      "a column of the first scenario with those plan fields (or its model or platform) changed "
      "(repeat for more columns)")(
      "engine", po::value<std::string>()->value_name("analytic"),
      "the engine of every column, and the only one: SimGrid runs one simulation per process "
      "(trainsim run a plan for it)")("format", po::value<std::string>()->value_name("text|json"),
                                      "what to print (default text)")(
      "html", po::value<std::string>()->value_name("FILE"),
      "also write one self-contained page ('-': on standard output, instead of the table): the "
      "table, and the columns' pipeline diagrams stacked on one time axis");
  d.add(budget_options("The budget's flags: every column's, over a scenario's own"));
  return d;
}

}  // namespace

CompareOptions parse_compare_options(const std::vector<std::string>& args) {
  const boost::program_options::variables_map vm =
      parse_command_line("compare", args, compare_flags(), "scenario");
  CompareOptions o;
  o.help = vm.count("help") > 0;
  o.scenarios = strings_of(vm, "scenario");
  o.sets = strings_of(vm, "set");
  if (const auto engine = string_of(vm, "engine")) {
    if (*engine == "simgrid") {
      fail_input("--engine",
                 "compare replays its columns on the analytic engine (SimGrid runs "
                 "one simulation per process): trainsim run each plan for SimGrid's");
    }
    if (*engine != "analytic") fail_input("--engine", "must be analytic, got '" + *engine + "'");
  }
  o.format = format_of(vm, o.format);
  o.html = path_of(vm, "html");
  o.budget = budget_of(vm);
  if (!o.help && o.scenarios.empty()) fail_input("trainsim compare", "needs a scenario file");
  if (!o.help && o.scenarios.size() + o.sets.size() < 2) {
    fail_input("trainsim compare", "needs two plans: two scenarios, or a scenario and a --set");
  }
  return o;
}

ColumnChange parse_set(const std::string& set) {
  std::map<std::string, std::string> values;  // key -> value, each key once
  std::stringstream items(set);
  std::string item;
  std::vector<std::string> keys = {"model", "platform"};
  const auto& fields = plan_field_names();
  keys.insert(keys.end(), fields.begin(), fields.end());
  while (std::getline(items, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      fail_input("--set", "expects KEY=VALUE[,KEY=VALUE...], got '" + set + "'");
    }
    const std::string key = item.substr(0, eq);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      fail_input("--set", "'" + key + "' is not a plan field, model or platform" +
                              did_you_mean(key, keys) + " (keys: " + join(keys, ", ") + ")");
    }
    if (!values.emplace(key, item.substr(eq + 1)).second) {
      fail_input("--set", "sets '" + key + "' twice in '" + set + "'");
    }
  }
  if (values.empty()) fail_input("--set", "expects KEY=VALUE[,KEY=VALUE...], got '" + set + "'");
  ColumnChange change;
  for (auto& [key, value] : values) {
    if (key == "model") {
      change.model = value;
    } else if (key == "platform") {
      change.platform = value;
    } else {
      change.plan_flags.emplace(key, value);
    }
  }
  return change;
}

std::string compare_help() {
  std::ostringstream o;
  o << "usage: trainsim compare SCENARIO [SCENARIO ...] [--set KEY=VALUE[,KEY=VALUE...]]...\n"
       "                        [--tokens T [--price-per-gpu-hour P] [--gpu-mtbf-hours H\n"
       "                        [--checkpoint-s C] [--restart-s R]]] [--format text|json]\n"
       "                        [--html FILE]\n"
       "\n"
       "Simulates several plans and prints them side by side: sequences per step (without\n"
       "gbs a plan runs mbs x dp), step time, tokens/s, MFU, pipeline bubble, exposed\n"
       "communication, the fullest stage's memory per GPU and whether it fits (tight: only\n"
       "without the allocator fragmentation the platform assumes), and where a plan has them\n"
       "its error-level diagnostics (trainsim check says what and why). Each scenario file\n"
       "is a column as it is; each --set is a column of the first scenario with those plan\n"
       "fields changed (the scenario's plan keys: tp, pp, vp, dp, mbs, gbs, schedule,\n"
       "recompute, zero, sp, ...), or on another model or platform (model=NAME|FILE,\n"
       "platform=NAME|FILE: the same plan on an H200, say).\n\n"
    << compare_flags()
    << "\nexamples: trainsim compare scenarios/llama3.1-70b-64gpu.json \\\n"
       "            --set schedule=interleaved,vp=5 --set recompute=full\n"
       "          trainsim compare nemotron4-340b --set platform=h200-sxm-ndr\n";
  return o.str();
}

}  // namespace trainsim
