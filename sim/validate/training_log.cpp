#include "sim/validate/training_log.hpp"

#include <algorithm>
#include <cctype>
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
constexpr std::string_view kNanotronTime = "elapsed_time_per_iteration_ms:";
constexpr std::string_view kNanotronTimeLater = "| time_per_iteration_ms:";
constexpr std::string_view kNanotronPeak = "Peak allocated";
constexpr std::string_view kTitanThroughput = "tps:";

// How a value is written after its key: a plain number, nanotron's human format (a suffix K, M,
// B, T for thousands), or with commas between thousands (torchtitan's "6,123").
enum class Written { kPlain, kHumanFormat, kThousandsCommas };

// The value at the start of `rest` as `written`, or none.
std::optional<double> number_at(std::string_view rest, Written written) {
  std::string text(rest);
  if (written == Written::kThousandsCommas) {
    std::size_t end = 0;
    while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) != 0 ||
                                 text[end] == ',' || text[end] == '.')) {
      ++end;
    }
    text.resize(end);
    text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || !std::isfinite(v) || v <= 0) return std::nullopt;
  if (written == Written::kHumanFormat && end != text.data() + text.size()) {
    const std::string_view units = "KMBT";
    if (const auto unit = units.find(*end); unit != std::string_view::npos) {
      v *= std::pow(1000.0, static_cast<double>(unit + 1));
    }
  }
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

// The number after `key` on `line` (spaces skipped; a "/mean" after it is Megatron-LM's running
// mean, not read); none where the key is absent. InputError for a key followed by no positive
// number.
std::optional<double> value_after(std::string_view line, std::string_view key,
                                  const std::string& where, Written written = Written::kPlain) {
  const auto at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + key.size());
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const auto v = number_at(rest, written);
  if (!v) {
    fail_input(where, "'" + std::string(key) + "' is followed by no positive number: '" +
                          std::string(rest.substr(0, 40)) + "'");
  }
  return v;
}

double median_after(const std::vector<double>& values, std::int64_t warmup) {
  if (values.empty()) return 0;
  std::vector<double> kept(values.begin() + warmup, values.end());
  std::sort(kept.begin(), kept.end());
  const std::size_t n = kept.size();
  return n % 2 == 1 ? kept[n / 2] : (kept[n / 2 - 1] + kept[n / 2]) / 2;
}

// An iteration time as Megatron-LM or nanotron prints it on `line`.
std::optional<double> iteration_time(std::string_view line, const std::string& where,
                                     TrainingLog& log) {
  if (const auto ms = value_after(line, kIteration, where)) return ms;
  if (line.find("iteration: ") == std::string_view::npos) return std::nullopt;
  auto ms = value_after(line, kNanotronTime, where, Written::kHumanFormat);
  if (!ms) ms = value_after(line, kNanotronTimeLater, where, Written::kHumanFormat);
  if (ms) log.rounded = true;
  return ms;
}

// torchtitan's throughput on a training step's line (not a validation step's).
std::optional<double> titan_throughput(std::string_view line, const std::string& where) {
  if (line.find("step:") == std::string_view::npos ||
      line.find("validate step:") != std::string_view::npos) {
    return std::nullopt;
  }
  return value_after(line, kTitanThroughput, where, Written::kThousandsCommas);
}

void read_line(std::string_view line, const std::string& where, TrainingLog& log) {
  if (const auto ms = iteration_time(line, where, log)) {
    log.iteration_ms.push_back(*ms);
  } else if (const auto tps = titan_throughput(line, where)) {
    log.tokens_per_s_per_gpu.push_back(*tps);
  }
  auto mib = value_after(line, kMaxAllocated, where);
  if (!mib) mib = value_after(line, kNanotronPeak, where);
  if (mib) {
    ++log.memory_reports;
    log.max_allocated_mib = std::max(log.max_allocated_mib, *mib);
  }
}

}  // namespace

double TrainingLog::step_time_s() const {
  return median_after(iteration_ms, warmup) / 1000.0;
}

double TrainingLog::throughput_per_gpu() const {
  return median_after(tokens_per_s_per_gpu, warmup);
}

std::string TrainingLog::source(const std::string& file) const {
  std::string what;
  if (has_step()) {
    const bool times = !gives_throughput();
    const auto kept =
        static_cast<std::int64_t>(times ? iteration_ms.size() : tokens_per_s_per_gpu.size()) -
        warmup;
    const std::string figure = times ? " logged iteration time" : " logged tokens/s per GPU";
    what = "median of " + std::to_string(kept) + figure + (kept == 1 || !times ? "" : "s") +
           (rounded ? " (rounded to three significant figures)" : "") +
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
    read_line(line, file + ": line " + std::to_string(++number), log);
  }
  if (!log.has_step() && log.memory_reports == 0) {
    fail_input(file,
               "holds no iteration time ('elapsed time per iteration (ms): ...', Megatron-LM's "
               "training log; 'elapsed_time_per_iteration_ms: ...', nanotron's), no throughput "
               "('step: ... tps: ...', torchtitan's) and no memory report ('| max allocated: "
               "...', 'Peak allocated ...MiB')");
  }
  // Iteration times time the step where a log prints both; throughputs are read only without.
  if (!log.iteration_ms.empty()) log.tokens_per_s_per_gpu.clear();
  const std::size_t logged = std::max(log.iteration_ms.size(), log.tokens_per_s_per_gpu.size());
  log.warmup = logged >= 3 ? 1 : 0;
  return log;
}

}  // namespace trainsim
