// The command lines of run, check, validate, reshard, compare and sweep, one argument per line
// after a first line naming the command, parsed as main() parses them; run's and check's plan
// flags then checked as resolve_inputs() checks them, reshard's layouts as reshard reads them.
#include <algorithm>
#include <vector>

#include "sim/cli/args.hpp"
#include "sim/cli/compare_command.hpp"
#include "sim/cli/sweep_command.hpp"
#include "sim/reshard/layout_spec.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using namespace trainsim;

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    lines.emplace_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return lines;
}

void parse(const std::string& command, const std::vector<std::string>& args) {
  if (command == "validate") {
    (void)parse_validate_options(args);
  } else if (command == "compare") {
    (void)parse_compare_options(args);
  } else if (command == "sweep") {
    (void)parse_sweep_options(args);
  } else if (command == "reshard") {
    const ReshardOptions opt = parse_reshard_options(args);
    if (opt.from) (void)parse_layout(*opt.from, "--from", Plan{});
    if (opt.to) (void)parse_layout(*opt.to, "--to", Plan{});
  } else {
    const RunOptions opt = parse_run_options(command, args);
    Plan plan;
    apply_plan_flags(plan, opt.inputs.plan_flags);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args = lines_of(fuzz::text_of(data, size));
  if (args.empty()) return 0;
  const std::string command = args.front();
  const std::vector<std::string> commands = {"run",     "check",   "validate",
                                             "reshard", "compare", "sweep"};
  if (std::find(commands.begin(), commands.end(), command) == commands.end()) return 0;
  args.erase(args.begin());
  return fuzz::expect_input_errors([&] { parse(command, args); });
}
