#include "sim/core/files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "sim/core/error.hpp"

namespace trainsim {

std::string read_text_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail_input(path.string(), "no such file");
  if (std::filesystem::is_directory(path, ec)) fail_input(path.string(), "is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(path.string(), "cannot open for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  std::error_code ec;
  auto parent = path.parent_path();
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, ec);
    if (ec) fail_input(path.string(), "cannot create directory: " + ec.message());
  }
  std::string pattern = path.string() + ".tmp-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) fail_input(path.string(), std::string("cannot write: ") + std::strerror(errno));
  // mkstemp creates the file 0600; give it the mode a plain write would (0666 less the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, static_cast<mode_t>(0666 & ~mask));
  const char* p = content.data();
  std::size_t left = content.size();
  bool ok = true;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      break;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  int saved = errno;
  ok = ok && ::fsync(fd) == 0;
  if (ok) saved = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok || std::rename(name.data(), path.c_str()) != 0) {
    if (saved == 0) saved = errno;
    ::unlink(name.data());
    fail_input(path.string(), std::string("cannot write: ") + std::strerror(saved));
  }
}

}  // namespace trainsim
