#pragma once
// Writes small safetensors files for the reshard tests: 8-byte little-endian header length, the
// JSON header, then the data. The data is left sparse (the file is extended, not filled), so a
// checkpoint of a large tensor costs no disk.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace trainsim::test {

/// `header` verbatim, then `data_bytes` bytes of data (zeros, sparse).
inline void write_safetensors(const std::filesystem::path& path, const std::string& header,
                              std::uint64_t data_bytes) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header;
  }
  std::filesystem::resize_file(path, 8 + header.size() + data_bytes);
}

/// Raw bytes: a header length that may lie, then `rest`.
inline void write_raw(const std::filesystem::path& path, std::uint64_t claimed_length,
                      const std::string& rest) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((claimed_length >> (8 * i)) & 0xff));
  out << rest;
}

}  // namespace trainsim::test
