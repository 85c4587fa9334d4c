#include "sim/core/child_process.hpp"

#include <sys/wait.h>
#include <unistd.h>

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

}  // namespace

std::optional<std::string> run_in_child(const std::function<std::string()>& work) {
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
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(p[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;  // a signal handled (an interrupt's, say)
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(p[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return text;
}

}  // namespace trainsim
