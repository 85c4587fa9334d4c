#pragma once
// The header of a safetensors file, read without any deep-learning runtime and without trusting
// the file: an 8-byte little-endian header length N, N bytes of UTF-8 JSON mapping each tensor
// name to {dtype, shape, data_offsets [begin, end]} (plus an optional "__metadata__" of strings),
// then the tensors' bytes, whose offsets count from the end of the header. The data is never
// read; everything the header claims is checked against the file.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace trainsim {

struct SavedTensor {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::int64_t bytes = 0;
  std::string file;  // as found (relative to the checkpoint directory)
  /// For one TP shard of a tensor (nanotron names its files "..._tp-rank-R-of-N"): R and N.
  std::int64_t tp_rank = -1;
  std::int64_t tp_size = 0;
};

struct SafetensorsHeader {
  std::vector<SavedTensor> tensors;  // in data order
  std::map<std::string, std::string> metadata;
  std::int64_t file_bytes = 0;
};

/// safetensors' own bound on the header (MAX_HEADER_SIZE, 100,000,000 bytes).
inline constexpr std::int64_t kMaxSafetensorsHeader = 100'000'000;

/// Bytes per element of a safetensors dtype ("BF16" 2, "F32" 4, ...); 0 for an unknown one.
std::int64_t dtype_bytes(const std::string& dtype);

/// Reads and checks the header of `path` (messages name it so); `name` is how SavedTensor::file
/// calls it (relative to the checkpoint).
/// InputError ("PATH: ...", with the tensor and key at fault) for a truncated file, a header length
/// beyond the file or the limit, a header that is not a JSON object, an unknown dtype, negative
/// or overflowing shapes, offsets that disagree with the shape, overlap, leave holes or run past
/// the file.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path,
                                          const std::string& name);

/// Checks a header already in memory (`text` is the JSON, `data_bytes` what follows it).
SafetensorsHeader parse_safetensors_header(const std::string& text, std::int64_t data_bytes,
                                           const std::string& where);

}  // namespace trainsim
