#pragma once
// The machinery of `trainsim sweep`: rows appended whole to a partial file, read back for a
// resume or a merge, computed by forked worker processes, with a progress line on stderr.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/sweep_spec.hpp"
#include "sim/platform/platform.hpp"
#include "sim/sweep/sweep_csv.hpp"

namespace trainsim {

/// The lines of a file that are complete rows, by index (a line cut short by a kill is dropped).
std::map<std::int64_t, std::string> read_rows(const std::filesystem::path& path);

/// Appends whole lines to the partial file: one write() per line, so a kill leaves whole lines and
/// at most one cut short, which the resume drops.
class PartialFile {
 public:
  explicit PartialFile(const std::filesystem::path& path);
  ~PartialFile();
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;
  void append(const std::string& line);

 private:
  int fd_;
  std::filesystem::path path_;
};

/// Progress on stderr: a line rewritten in place on a terminal, a plain line every few seconds
/// otherwise.
class Progress {
 public:
  Progress(std::ostream& err, std::int64_t total, std::int64_t done);
  void tick();

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& err_;
  std::int64_t total_, done_, start_done_;
  bool tty_;
  Clock::time_point start_ = Clock::now(), last_ = Clock::now();
};

/// What every plan of a sweep is priced with: the model, and each platform of the spec with the
/// budget its plans are costed with (the platform's own price where the sweep gives one).
struct SweepContext {
  const SweepSpec& spec;
  const Model& model;
  std::vector<Platform> platforms;
  std::vector<TrainingBudget> budgets;
};

/// The context of `spec`: its platforms loaded, `budget` (the flags' over the file's) with each
/// platform's price where the file gives one and no --price-per-gpu-hour overrides it.
SweepContext sweep_context(const SweepSpec& spec, const Model& model, const TrainingBudget& budget,
                           bool price_flag);

/// The CSV line of plan `index`. `shapes`: collective shapes priced already, one cache per
/// platform.
std::string row_line(const SweepContext& c, std::int64_t index,
                     std::vector<CollectiveShapes>& shapes);

/// Runs `todo` in `jobs` forked workers, worker w taking every jobs-th plan from w; each line is
/// passed back whole through a pipe and appended to `part` by this process.
void run_workers(const SweepContext& c, const std::vector<std::int64_t>& todo, std::int64_t jobs,
                 PartialFile& part, Progress& progress);

}  // namespace trainsim
