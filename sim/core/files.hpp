#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace trainsim {

/// Reads a whole file; InputError naming the file when it cannot be read.
std::string read_text_file(const std::filesystem::path& path);

/// Writes `content` to a temporary file next to `path`, then renames it over `path`, so a reader
/// never sees a half-written file. Creates missing parent directories. InputError on failure.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace trainsim
