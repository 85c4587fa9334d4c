// Kernel databases read once per process (kernel_db.hpp: shared_kernel_database).
#include <map>
#include <mutex>
#include <system_error>

#include "sim/platform/kernel_db.hpp"

namespace trainsim {

namespace {

// What identifies a file's contents without reading it: a rewritten file has another size or
// modification time, and is read again.
struct FileStamp {
  std::uintmax_t size = 0;
  std::filesystem::file_time_type modified;
  bool operator==(const FileStamp&) const = default;
};

std::optional<FileStamp> stamp_of(const std::filesystem::path& path) {
  std::error_code ec;
  FileStamp s;
  s.size = std::filesystem::file_size(path, ec);
  if (ec) return std::nullopt;
  s.modified = std::filesystem::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return s;
}

struct Cached {
  FileStamp stamp;
  std::shared_ptr<const KernelDatabase> db;
};

}  // namespace

std::shared_ptr<const KernelDatabase> shared_kernel_database(const std::filesystem::path& path) {
  static std::mutex mutex;
  static std::map<std::filesystem::path, Cached> cache;
  std::error_code ec;
  const std::filesystem::path key = std::filesystem::weakly_canonical(path, ec);
  const auto stamp = stamp_of(path);
  if (ec || !stamp) return std::make_shared<const KernelDatabase>(load_kernel_database(path));
  {
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end() && it->second.stamp == *stamp) return it->second.db;
  }
  // Read outside the lock (a bad file throws, and nothing is kept); the last reader's copy stays.
  auto db = std::make_shared<const KernelDatabase>(load_kernel_database(path));
  const std::lock_guard<std::mutex> lock(mutex);
  cache[key] = Cached{*stamp, db};
  return db;
}

}  // namespace trainsim
