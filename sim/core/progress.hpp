#pragma once
// A progress line on stderr for work that runs long: what is being done, how far, the rate and
// the time left, rewritten in place on a terminal. Quiet for work that ends within a couple of
// seconds, and when stderr is not a terminal (a log or a test), unless TRAINSIM_PROGRESS=always
// (then each phase as it starts, the counts every few seconds and how long it took, as plain
// lines); TRAINSIM_PROGRESS=never silences it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace trainsim {

/// Work done out of a total, counted from any thread (an engine counts the ops it replays).
struct ProgressCounter {
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> total{0};
};

/// "replaying on SimGrid: 120,000/480,000 ops, 40,000 ops/s, 9 s left" (no counts while the
/// total is unknown: "building the task graph, 3 s").
std::string progress_text(std::string_view phase, std::uint64_t done, std::uint64_t total,
                          double phase_seconds);

class ProgressLine {
 public:
  /// Starts a thread that draws the line (nothing when progress is off).
  ProgressLine();
  /// Clears the line (or, when forced off a terminal, prints how long the work took).
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  /// What is being done now, with its counter (null: none).
  void phase(std::string_view what, const ProgressCounter* counter = nullptr);

 private:
  using Clock = std::chrono::steady_clock;
  void draw_loop();
  std::string current_text();

  enum class Mode { kOff, kTerminal, kAlways };
  Mode mode_;
  Clock::time_point start_ = Clock::now();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool drawn_ = false;
  std::string phase_;
  const ProgressCounter* counter_ = nullptr;
  Clock::time_point phase_start_ = start_;
  std::thread thread_;
};

}  // namespace trainsim
