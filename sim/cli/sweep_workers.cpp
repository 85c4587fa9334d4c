#include "sim/cli/sweep_workers.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/core/error.hpp"
#include "sim/core/files.hpp"
#include "sim/core/interrupt.hpp"

namespace trainsim {

std::map<std::int64_t, std::string> read_rows(const std::filesystem::path& path) {
  std::map<std::int64_t, std::string> rows;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return rows;
  const std::string text = read_text_file(path);
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    if (end == std::string::npos) break;  // no newline: cut short
    const std::string line = text.substr(start, end - start);
    if (auto index = sweep_csv_index(line)) rows[*index] = line + "\n";
    start = end + 1;
  }
  return rows;
}

PartialFile::PartialFile(const std::filesystem::path& path)
    : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)), path_(path) {
  if (fd_ < 0) fail_input(path.string(), "cannot be written");
}

PartialFile::~PartialFile() {
  ::close(fd_);
}

void PartialFile::append(const std::string& line) {
  if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    fail_input(path_.string(), "write failed");
  }
}

Progress::Progress(std::ostream& err, std::int64_t total, std::int64_t done)
    : err_(err), total_(total), done_(done), start_done_(done), tty_(::isatty(2) == 1) {}

void Progress::tick() {
  ++done_;
  const auto now = Clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (done_ < total_ && since < (tty_ ? 0.2 : 5.0)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done_ - start_done_) / elapsed : 0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : 0;
  err_ << (tty_ ? "\r" : "") << "sweep: " << done_ << "/" << total_ << " plans, "
       << static_cast<std::int64_t>(rate) << " plans/s, ETA " << static_cast<std::int64_t>(eta)
       << " s" << (tty_ && done_ < total_ ? "" : "\n") << std::flush;
}

SweepContext sweep_context(const SweepSpec& spec, const Model& model, const TrainingBudget& budget,
                           bool price_flag) {
  SweepContext c{spec, model, {}, {}};
  for (const SweepPlatform& p : spec.platforms) {
    c.platforms.push_back(load_platform(p.file));
    c.budgets.push_back(budget);
    if (p.price_per_gpu_hour && !price_flag)
      c.budgets.back().price_per_gpu_hour = p.price_per_gpu_hour;
  }
  return c;
}

std::string row_line(const SweepContext& c, std::int64_t index,
                     std::vector<CollectiveShapes>& shapes) {
  const SweepPoint point = sweep_point(c.spec, index);
  const Platform& platform = c.platforms[point.platform];
  const TrainingBudget& budget = c.budgets[point.platform];
  auto plan = sweep_plan(point);
  if (auto* refused = std::get_if<SweepRow>(&plan)) {
    refused->platform = platform.name;
    return sweep_csv_line(*refused, budget);
  }
  const Plan& p = std::get<Plan>(plan);
  return sweep_csv_line(evaluate_sweep_plan(c.model, platform, p, index, &shapes[point.platform],
                                            same_plan_as(c.spec, point, p)),
                        budget);
}

void run_workers(const SweepContext& c, const std::vector<std::int64_t>& todo, std::int64_t jobs,
                 PartialFile& part, Progress& progress) {
  std::vector<int> fds;
  std::vector<pid_t> pids;
  for (std::int64_t w = 0; w < jobs; ++w) {
    int p[2];
    if (::pipe(p) != 0) fail_input("--jobs", "cannot create a pipe for a worker");
    const pid_t pid = ::fork();
    if (pid == 0) {
      reset_interrupt_handlers();  // the parent speaks for the sweep and removes its temp files
      ::close(p[0]);
      std::vector<CollectiveShapes> shapes(c.platforms.size());
      for (std::size_t i = static_cast<std::size_t>(w); i < todo.size();
           i += static_cast<std::size_t>(jobs)) {
        const std::string line = row_line(c, todo[i], shapes);
        std::size_t sent = 0;
        while (sent < line.size()) {
          const auto n = ::write(p[1], line.data() + sent, line.size() - sent);
          if (n <= 0) ::_exit(1);
          sent += static_cast<std::size_t>(n);
        }
      }
      ::_exit(0);
    }
    ::close(p[1]);
    if (pid < 0) fail_input("--jobs", "cannot start a worker process");
    fds.push_back(p[0]);
    pids.push_back(pid);
  }
  std::vector<std::string> pending(fds.size());
  std::size_t open = fds.size();
  while (open > 0) {
    std::vector<pollfd> polls;
    for (int fd : fds) polls.push_back({fd, POLLIN, 0});
    ::poll(polls.data(), polls.size(), -1);
    for (std::size_t w = 0; w < fds.size(); ++w) {
      if (fds[w] < 0 || !(polls[w].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      const auto n = ::read(fds[w], buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[w]);
        fds[w] = -1;
        --open;
        continue;
      }
      pending[w].append(buf, static_cast<std::size_t>(n));
      for (auto nl = pending[w].find('\n'); nl != std::string::npos; nl = pending[w].find('\n')) {
        part.append(pending[w].substr(0, nl + 1));
        pending[w].erase(0, nl + 1);
        progress.tick();
      }
    }
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fail_input("--jobs", "a worker process failed; rerun to resume");
    }
  }
}

}  // namespace trainsim
