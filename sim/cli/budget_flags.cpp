#include "sim/cli/budget_flags.hpp"

#include <cassert>
#include <cstdlib>

#include "sim/core/error.hpp"

namespace trainsim {

RealRange budget_tokens_range() {
  return {0.0, false, TrainingBudget::kMaxTokens, true};
}
RealRange budget_price_range() {
  return {0.0, false, TrainingBudget::kMaxPrice, true};
}

void set_budget_flag(TrainingBudget& budget, const std::string& flag, const std::string& value) {
  const bool tokens = flag == "--tokens";
  assert(tokens || flag == "--price-per-gpu-hour");
  const RealRange range = tokens ? budget_tokens_range() : budget_price_range();
  char* end = nullptr;
  const double x = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !range.holds(x)) {
    fail_input(flag, "must be " + range.describe() + ", got '" + value + "'");
  }
  (tokens ? budget.tokens : budget.price_per_gpu_hour) = x;
}

TrainingBudget read_budget(JsonObject& o) {
  return {o.optional_number("tokens", budget_tokens_range()),
          o.optional_number("price_per_gpu_hour", budget_price_range())};
}

TrainingBudget over(const TrainingBudget& flags, const TrainingBudget& file) {
  return {flags.tokens ? flags.tokens : file.tokens,
          flags.price_per_gpu_hour ? flags.price_per_gpu_hour : file.price_per_gpu_hour};
}

std::string budget_flags_help() {
  return "  --tokens T           tokens to train on (e.g. 15e12): the steps of gbs x seq-len\n"
         "                       tokens they take, the days at the predicted step time and the\n"
         "                       GPU-hours (training steps only: no evaluation, checkpoint\n"
         "                       saves, restarts or data stalls)\n"
         "  --price-per-gpu-hour P  with --tokens: the cost, GPU-hours x P\n";
}

}  // namespace trainsim
