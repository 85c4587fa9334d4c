#include "sim/core/child_process.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "sim/core/interrupt.hpp"

namespace trainsim {

namespace {

// All of `text` to `fd`; false where a write fails.
bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// A child at work: its process, the pipe its text comes through, what came so far.
struct Child {
  std::size_t index = 0;  // of its work
  pid_t pid = -1;
  int fd = -1;
  std::string text;
};

// Forks a child that runs `work` and writes its text to a pipe; none where that fails.
std::optional<Child> start(const std::function<std::string()>& work, std::size_t index) {
  std::fflush(nullptr);
  int p[2];
  if (::pipe(p) != 0) return std::nullopt;
  const pid_t pid = ::fork();
  if (pid == 0) {
    reset_interrupt_handlers();  // the parent's handler owns its temp files and last words
    ::close(p[0]);
    bool ok = false;
    try {
      ok = write_all(p[1], work());
    } catch (...) {
      ok = false;
    }
    ::_exit(ok ? 0 : 1);
  }
  ::close(p[1]);
  if (pid < 0) {
    ::close(p[0]);
    return std::nullopt;
  }
  return Child{index, pid, p[0], {}};
}

// Reads what the child has written now; false at the end of its text.
bool read_some(Child& c) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(c.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;  // a signal handled (an interrupt's, say)
    if (n <= 0) return false;
    c.text.append(buf, static_cast<std::size_t>(n));
    return true;
  }
}

// The child's text once it has exited well; none where it failed.
std::optional<std::string> finish(Child& c) {
  ::close(c.fd);
  int status = 0;
  while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return std::move(c.text);
}

}  // namespace

std::vector<std::optional<std::string>> run_in_children(
    const std::vector<std::function<std::string()>>& works, std::size_t jobs) {
  std::vector<std::optional<std::string>> out(works.size());
  std::vector<Child> running;
  std::size_t next = 0;
  while (next < works.size() || !running.empty()) {
    while (next < works.size() && running.size() < std::max<std::size_t>(jobs, 1)) {
      if (auto c = start(works[next], next)) running.push_back(std::move(*c));
      ++next;  // a child that could not start leaves its result empty
    }
    if (running.empty()) continue;
    std::vector<pollfd> fds;
    for (const Child& c : running) fds.push_back({c.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;              // a signal handled: poll again
      for (pollfd& f : fds) f.revents = POLLIN;  // poll itself failed: read each to its end
    }
    for (std::size_t i = running.size(); i-- > 0;) {
      if (fds[i].revents == 0 || read_some(running[i])) continue;
      out[running[i].index] = finish(running[i]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  return out;
}

std::optional<std::string> run_in_child(const std::function<std::string()>& work) {
  return run_in_children({work}, 1).front();
}

}  // namespace trainsim
