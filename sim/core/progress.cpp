#include "sim/core/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "sim/core/format.hpp"
#include "sim/core/interrupt.hpp"

namespace trainsim {

namespace {

// Quiet for this long, then redrawn this often.
constexpr std::chrono::milliseconds kDelay{2000};
constexpr std::chrono::milliseconds kTerminalPeriod{250};
constexpr std::chrono::milliseconds kLogPeriod{5000};

void write_stderr(const std::string& text) {
  [[maybe_unused]] const auto ignored = ::write(2, text.data(), text.size());
}

std::string seconds_text(double s) {
  if (s < 90) return std::to_string(static_cast<long long>(std::lround(s))) + " s";
  if (s < 5400) return std::to_string(static_cast<long long>(std::lround(s / 60))) + " min";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f h", s / 3600);
  return buffer;
}

}  // namespace

std::string progress_text(std::string_view phase, std::uint64_t done, std::uint64_t total,
                          double phase_seconds) {
  std::string text(phase);
  if (total == 0) return text + ", " + seconds_text(phase_seconds);
  text += ": " + format_grouped(static_cast<std::int64_t>(done)) + "/" +
          format_grouped(static_cast<std::int64_t>(total));
  const double rate = phase_seconds > 0 ? static_cast<double>(done) / phase_seconds : 0;
  text += ", " + format_grouped(static_cast<std::int64_t>(rate)) + "/s";
  if (rate > 0 && done < total) {
    text += ", " + seconds_text(static_cast<double>(total - done) / rate) + " left";
  }
  return text;
}

ProgressLine::ProgressLine() {
  const char* env = std::getenv("TRAINSIM_PROGRESS");
  const std::string setting = env ? env : "auto";
  mode_ = setting == "always"  ? Mode::kAlways
          : setting == "never" ? Mode::kOff
          : ::isatty(2) == 1   ? Mode::kTerminal
                               : Mode::kOff;
  if (mode_ != Mode::kOff) thread_ = thread_without_interrupts([this] { draw_loop(); });
}

ProgressLine::~ProgressLine() {
  if (mode_ == Mode::kOff) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  const double total = std::chrono::duration<double>(Clock::now() - start_).count();
  if (mode_ == Mode::kAlways) {
    write_stderr("progress: done in " + seconds_text(total) + "\n");
  } else if (drawn_) {
    write_stderr("\r\033[K");  // the report follows on a clean line
  }
}

void ProgressLine::phase(std::string_view what, const ProgressCounter* counter) {
  if (mode_ == Mode::kOff) return;
  std::lock_guard lock(mutex_);
  phase_ = what;
  counter_ = counter;
  phase_start_ = Clock::now();
  if (mode_ == Mode::kAlways) write_stderr(phase_ + "\n");  // a log: each phase as it starts
}

std::string ProgressLine::current_text() {
  const double seconds = std::chrono::duration<double>(Clock::now() - phase_start_).count();
  if (counter_ == nullptr) return progress_text(phase_, 0, 0, seconds);
  return progress_text(phase_, counter_->done.load(std::memory_order_relaxed),
                       counter_->total.load(std::memory_order_relaxed), seconds);
}

void ProgressLine::draw_loop() {
  std::unique_lock lock(mutex_);
  const auto period = mode_ == Mode::kTerminal ? kTerminalPeriod : kLogPeriod;
  auto next = start_ + (mode_ == Mode::kTerminal ? kDelay : period);
  while (!stop_) {
    if (wake_.wait_until(lock, next, [this] { return stop_; })) break;
    next += period;
    if (phase_.empty()) continue;
    const std::string text = current_text();
    write_stderr(mode_ == Mode::kTerminal ? "\r\033[K" + text : text + "\n");
    drawn_ = true;
  }
}

}  // namespace trainsim
