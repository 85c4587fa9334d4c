#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainsim {

/// Reads a whole file; InputError naming the file when it cannot be read.
std::string read_text_file(const std::filesystem::path& path);

/// Writes `content` to a temporary file next to `path`, then renames it over `path`, so a reader
/// never sees a half-written file. Creates missing parent directories. The temporary file is
/// registered for removal on SIGINT/SIGTERM. InputError naming the path on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

/// Writes an output the user named: through a symlink to its target; straight into a FIFO or a
/// character device (a pipe, /dev/null, a terminal); a regular file atomically, keeping the mode
/// of the file it replaces. A directory or block device is refused. InputError naming the path.
void write_output(const std::filesystem::path& path, std::string_view content);
/// write_output(), then the output marked written for the interrupt handler, with SIGINT and
/// SIGTERM held until both are done: an interrupt never names as not written an output in place.
void write_expected_output(const std::filesystem::path& path, std::string_view content);

/// What an output path writes to, for telling two outputs apart: "-" for standard output, else
/// the absolute path after following symlinks.
std::string output_identity(const std::filesystem::path& path);

/// Refuses two outputs on one file (the second would overwrite the first): InputError naming
/// both flags and the path. Each entry is (flag, path); several outputs into one character
/// device (/dev/null) are allowed.
void refuse_shared_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

}  // namespace trainsim
