#include "sim/core/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <vector>

#include "sim/core/error.hpp"
#include "sim/core/interrupt.hpp"

namespace trainsim {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail_write(const fs::path& path, int error) {
  fail_input(path.string(), std::string("cannot write: ") + std::strerror(error));
}

// Blocks every signal for its lifetime (SIGKILL and SIGSTOP excepted).
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t all;
    sigfillset(&all);
    ::sigprocmask(SIG_BLOCK, &all, &old_);
  }
  ~SignalsHeld() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t old_;
};

// Writes all of `content` to `fd`; false with errno set on failure.
bool write_all(int fd, std::string_view content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

// The file a path names after following its symlinks (a dangling link: the file it would make).
fs::path follow_symlinks(const fs::path& path) {
  fs::path at = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(at, ec))) return at;
    const fs::path target = fs::read_symlink(at, ec);
    if (ec) fail_input(path.string(), "cannot follow the symlink: " + ec.message());
    at = target.is_absolute() ? target : at.parent_path() / target;
  }
  fail_input(path.string(), "too many levels of symlinks");
}

std::optional<struct stat> stat_of(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

// A FIFO or character device: opened and written in place, never replaced.
void write_stream(const fs::path& shown, const fs::path& target, std::string_view content) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) fail_write(shown, errno);
  const bool ok = write_all(fd, content);
  const int saved = errno;
  ::close(fd);
  if (!ok) fail_write(shown, saved);
}

// A temporary file beside `path` that replaces it on commit() and otherwise disappears.
class TempFile {
 public:
  explicit TempFile(fs::path path) : path_(std::move(path)) {
    const fs::path folder = path_.parent_path().empty() ? fs::path(".") : path_.parent_path();
    // Naming it later goes through /proc/self/fd.
    if (::access("/proc/self/fd", X_OK) == 0) {
      fd_ = ::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
      if (fd_ >= 0) return;
    }
    std::string pattern = path_.string() + ".tmp-XXXXXX";
    name_.assign(pattern.begin(), pattern.end());
    name_.push_back('\0');
    const SignalsHeld held;  // a kill between creating and registering would leave it
    fd_ = ::mkstemp(name_.data());
    if (fd_ < 0) fail_write(path_, errno);
    registration_.emplace(name_.data());
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!name_.empty() && !committed_) ::unlink(name_.data());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }

  // Names the anonymous file: the path itself where nothing is there yet, else a fresh temp name
  // renamed over the path (link cannot replace a file); or renames the named temp file.
  void commit() {
    const SignalsHeld held;
    const bool at_path = name_.empty() && link_to_path();
    if (!at_path && name_.empty()) link_anonymous();
    const int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0 || (!at_path && std::rename(name_.data(), path_.c_str()) != 0)) {
      fail_write(path_, errno);
    }
    committed_ = true;
  }

 private:
  std::string proc_path() const { return "/proc/self/fd/" + std::to_string(fd_); }

  // A new file: named at once, no temp name ever exists. False where the path exists.
  bool link_to_path() {
    if (::linkat(AT_FDCWD, proc_path().c_str(), AT_FDCWD, path_.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      return true;
    }
    if (errno != EEXIST) fail_write(path_, errno);
    return false;
  }

  // A replaced file: SIGKILL between this link and the rename after it leaves the temp name,
  // `<path>.tmp-<pid>-<n>`, which the next write of the path removes (remove_stale_temps).
  void link_anonymous() {
    const std::string proc = proc_path();
    for (int attempt = 0;; ++attempt) {
      const std::string name =
          path_.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
      if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
        name_.assign(name.begin(), name.end());
        name_.push_back('\0');
        registration_.emplace(name_.data());
        return;
      }
      if (errno != EEXIST || attempt > 100) fail_write(path_, errno);
    }
  }

  fs::path path_;
  int fd_ = -1;
  std::vector<char> name_;  // empty while the file has no name
  std::optional<TempFileRegistration> registration_;
  bool committed_ = false;
};

// Removes what runs killed between naming a replacement and renaming it left beside `path`:
// `<path>.tmp-<pid>-<n>` of a process that no longer exists.
void remove_stale_temps(const fs::path& path) {
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string prefix = path.filename().string() + ".tmp-";
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path entry = it->path();
    const std::string name = entry.filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string_view rest = std::string_view(name).substr(prefix.size());
    const auto dash = rest.find('-');
    if (dash == std::string_view::npos || dash == 0 || dash + 1 == rest.size() ||
        rest.find_first_not_of("0123456789", dash + 1) != std::string_view::npos) {
      continue;
    }
    pid_t pid = 0;
    const auto parsed = std::from_chars(rest.data(), rest.data() + dash, pid);
    if (parsed.ec != std::errc() || parsed.ptr != rest.data() + dash || pid <= 0 ||
        pid == ::getpid()) {
      continue;
    }
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // running, or not ours to judge
    std::error_code ignored;
    fs::remove(entry, ignored);
  }
}

}  // namespace

std::string read_text_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail_input(path.string(), "no such file");
  if (fs::is_directory(path, ec)) fail_input(path.string(), "is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(path.string(), "cannot open for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_file_atomically(const fs::path& path, std::string_view content) {
  std::error_code ec;
  auto parent = path.parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) fail_input(path.string(), "cannot create directory: " + ec.message());
  }
  // The new content goes to a file without a name in the same folder (O_TMPFILE) and is given one
  // only once complete, so that even SIGKILL leaves no temp file behind; where the filesystem
  // cannot, a named temp file registered for removal on SIGINT and SIGTERM.
  const auto existing = stat_of(path);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  const mode_t mode = existing ? existing->st_mode & 07777 : static_cast<mode_t>(0666 & ~mask);
  remove_stale_temps(path);
  TempFile temp(path);
  ::fchmod(temp.fd(), mode);
  if (!write_all(temp.fd(), content) || ::fsync(temp.fd()) != 0) fail_write(path, errno);
  temp.commit();
}

void write_output(const fs::path& path, std::string_view content) {
  const fs::path target = follow_symlinks(path);
  if (const auto st = stat_of(target)) {
    if (S_ISDIR(st->st_mode)) fail_input(path.string(), "is a directory");
    if (S_ISFIFO(st->st_mode) || S_ISCHR(st->st_mode)) return write_stream(path, target, content);
    if (!S_ISREG(st->st_mode)) {
      fail_input(path.string(), "is not a regular file, a FIFO or a character device");
    }
  }
  write_file_atomically(target, content);
}

void write_expected_output(const fs::path& path, std::string_view content) {
  const InterruptsHeld held;
  write_output(path, content);
  output_written(path.string());
}

std::string output_identity(const fs::path& path) {
  if (path == "-") return "-";
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(fs::absolute(follow_symlinks(path)), ec);
  return (ec ? fs::absolute(path).lexically_normal() : target).string();
}

void refuse_shared_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string a = output_identity(outputs[i].second);
    const auto st = a == "-" ? std::nullopt : stat_of(a);
    if (st && S_ISCHR(st->st_mode)) continue;
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      if (output_identity(outputs[j].second) != a) continue;
      fail_input(outputs[j].first, "writes the same file as " + outputs[i].first + " (" +
                                       outputs[j].second + "): give each output its own path");
    }
  }
}

}  // namespace trainsim
