#include "sim/cli/budget_flags.hpp"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <vector>

#include "sim/cli/command_line.hpp"
#include "sim/core/error.hpp"

namespace trainsim {

namespace {

// Each budget field: its flag, its key in a scenario or sweep file, the range its value must lie
// in (in a file as from a flag), and its help.
struct BudgetField {
  const char* flag;
  const char* value_name;
  const char* key;
  RealRange range;
  std::optional<double> TrainingBudget::*field;
  const char* help;
};

const std::vector<BudgetField>& budget_fields() {
  static const std::vector<BudgetField> fields = {
      {"--tokens",
       "T",
       "tokens",
       {0.0, false, TrainingBudget::kMaxTokens, true},
       &TrainingBudget::tokens,
       "tokens to train on (e.g. 15e12; a scenario's \"tokens\"): the steps of gbs x seq-len "
       "tokens they take, the days at the predicted step time (with its P10-P90 band) and the "
       "GPU-hours; training steps only (no evaluation or data stalls; failures, checkpoint saves "
       "and restarts with --gpu-mtbf-hours)"},
      {"--price-per-gpu-hour",
       "P",
       "price_per_gpu_hour",
       {0.0, false, TrainingBudget::kMaxPrice, true},
       &TrainingBudget::price_per_gpu_hour,
       "with --tokens: the run's cost, GPU-hours x P (a scenario's \"price_per_gpu_hour\")"},
      {"--gpu-mtbf-hours",
       "H",
       "gpu_mtbf_hours",
       {0.0, false, TrainingBudget::kMaxHours, true},
       &TrainingBudget::gpu_mtbf_hours,
       "with --tokens: the run with failures, one per H GPU-hours (a scenario's "
       "\"gpu_mtbf_hours\"), each costing the work since the last checkpoint and a restart, "
       "checkpointed at the interval that loses least (Young/Daly); Llama 3's pre-training "
       "on 16,384 H100s saw one interruption per about 50,676 GPU-hours"},
      {"--checkpoint-s",
       "C",
       "checkpoint_s",
       {0.0, true, TrainingBudget::kMaxSeconds, true},
       &TrainingBudget::checkpoint_s,
       "seconds a checkpoint save stops training (default 0)"},
      {"--restart-s",
       "R",
       "restart_s",
       {0.0, true, TrainingBudget::kMaxSeconds, true},
       &TrainingBudget::restart_s,
       "seconds a failure costs beyond the lost work: finding it, relaunching, loading the "
       "checkpoint (default 0)"},
  };
  return fields;
}

}  // namespace

double real_flag(const std::string& flag, const std::string& value, const RealRange& range) {
  char* end = nullptr;
  const double x = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !range.holds(x)) {
    fail_input(flag, "must be " + range.describe() + ", got '" + value + "'");
  }
  return x;
}

void fail_without_tokens(const std::string& where) {
  fail_input(where, "applies to a token budget: give --tokens too (or the file's \"tokens\")");
}

TrainingBudget read_budget(JsonObject& o) {
  TrainingBudget budget;
  for (const BudgetField& f : budget_fields()) {
    budget.*(f.field) = o.optional_number(f.key, f.range);
  }
  return budget;
}

TrainingBudget over(const TrainingBudget& flags, const TrainingBudget& file) {
  TrainingBudget budget;
  for (const BudgetField& f : budget_fields()) {
    budget.*(f.field) = flags.*(f.field) ? flags.*(f.field) : file.*(f.field);
  }
  if (budget.tokens) return budget;
  for (const BudgetField& f : budget_fields()) {
    if (flags.*(f.field)) fail_without_tokens(f.flag);
  }
  return budget;
}

boost::program_options::options_description budget_options(const std::string& caption) {
  boost::program_options::options_description d(caption, kHelpWidth, kHelpDescriptionWidth);
  for (const BudgetField& f : budget_fields()) {
    d.add_options()(f.flag + 2,
                    boost::program_options::value<std::string>()->value_name(f.value_name), f.help);
  }
  return d;
}

TrainingBudget budget_of(const boost::program_options::variables_map& vm) {
  TrainingBudget budget;
  for (const BudgetField& f : budget_fields()) {
    if (vm.count(f.flag + 2)) {
      budget.*(f.field) = real_flag(f.flag, vm[f.flag + 2].as<std::string>(), f.range);
    }
  }
  return budget;
}

std::string budget_text(const TrainingBudget& budget) {
  std::string out;
  for (const BudgetField& f : budget_fields()) {
    char value[32];
    const auto& v = budget.*(f.field);
    std::snprintf(value, sizeof value, "%.17g", v.value_or(-1));
    out += std::string(f.key) + "=" + (v ? value : "none") + " ";
  }
  return out;
}

}  // namespace trainsim
