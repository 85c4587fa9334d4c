#include "sim/validate/training_log.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <sstream>
#include <string_view>

#include "sim/core/error.hpp"

namespace trainsim {

namespace {

constexpr std::string_view kIteration = "elapsed time per iteration (ms):";
constexpr std::string_view kMaxAllocated = "| max allocated:";

// The number after `key` on `line` (spaces skipped; a "/mean" after it is Megatron-LM's running
// mean, not read); none where the key is absent. InputError for a key followed by no positive
// number.
std::optional<double> value_after(std::string_view line, std::string_view key,
                                  const std::string& where) {
  const auto at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + key.size());
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
  if (ec != std::errc() || !std::isfinite(v) || v <= 0) {
    fail_input(where, "'" + std::string(key) + "' is followed by no positive number: '" +
                          std::string(rest.substr(0, 40)) + "'");
  }
  (void)end;
  return v;
}

}  // namespace

double TrainingLog::step_time_s() const {
  std::vector<double> kept(iteration_ms.begin() + warmup, iteration_ms.end());
  std::sort(kept.begin(), kept.end());
  const std::size_t n = kept.size();
  const double median = n % 2 == 1 ? kept[n / 2] : (kept[n / 2 - 1] + kept[n / 2]) / 2;
  return median / 1000.0;
}

std::string TrainingLog::source(const std::string& file) const {
  std::string what;
  if (has_step()) {
    const auto kept = static_cast<std::int64_t>(iteration_ms.size()) - warmup;
    what = "median of " + std::to_string(kept) +
           (kept == 1 ? " logged iteration time" : " logged iteration times") +
           (warmup > 0 ? ", the first interval left out as warm-up" : "");
  }
  if (memory_reports > 0) {
    what += std::string(has_step() ? "; " : "") + "largest max allocated of " +
            std::to_string(memory_reports) +
            (memory_reports == 1 ? " memory report" : " memory reports");
  }
  return file + " (" + what + ")";
}

TrainingLog read_training_log(const std::string& text, const std::string& file) {
  TrainingLog log;
  std::istringstream in(text);
  std::int64_t number = 0;
  for (std::string line; std::getline(in, line);) {
    const std::string where = file + ": line " + std::to_string(++number);
    if (const auto ms = value_after(line, kIteration, where)) log.iteration_ms.push_back(*ms);
    if (const auto mib = value_after(line, kMaxAllocated, where)) {
      ++log.memory_reports;
      log.max_allocated_mib = std::max(log.max_allocated_mib, *mib);
    }
  }
  if (!log.has_step() && log.memory_reports == 0) {
    fail_input(file,
               "holds no iteration time ('elapsed time per iteration (ms): ...', Megatron-LM's "
               "training log) and no memory report ('| max allocated: ...')");
  }
  log.warmup = log.iteration_ms.size() >= 3 ? 1 : 0;
  return log;
}

}  // namespace trainsim
