#include "sim/reshard/safetensors.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "sim/core/error.hpp"
#include "sim/core/json_reader.hpp"

namespace trainsim {

std::int64_t dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, std::int64_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
      {"F32", 4},  {"F64", 8}, {"I64", 8}, {"U64", 8},     {"C64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

namespace {

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();

std::string at(const std::string& where, const std::string& tensor, const std::string& key) {
  return where + ": $[\"" + tensor + "\"]" + (key.empty() ? "" : "." + key);
}

std::int64_t non_negative(const nlohmann::json& v, const std::string& where) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxInt)) {
      fail_input(where, "is larger than 2^63 - 1: " + v.dump());
    }
    return v.get<std::int64_t>();
  }
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
    fail_input(where, "must be a non-negative integer, got " + json_excerpt(v));
  }
  return v.get<std::int64_t>();
}

SavedTensor read_entry(const std::string& name, const nlohmann::json& e, const std::string& where,
                       std::int64_t& begin, std::int64_t& end) {
  if (!e.is_object())
    fail_input(at(where, name, ""), "must be an object with dtype, shape and data_offsets");
  for (const auto& [key, value] : e.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail_input(at(where, name, key), "unknown key (known keys: data_offsets, dtype, shape)");
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!e.contains(key)) fail_input(at(where, name, key), "is missing");
  }
  SavedTensor t;
  t.name = name;
  if (!e["dtype"].is_string()) fail_input(at(where, name, "dtype"), "must be a string");
  t.dtype = e["dtype"].get<std::string>();
  const std::int64_t size = dtype_bytes(t.dtype);
  if (size == 0) fail_input(at(where, name, "dtype"), "unknown dtype \"" + t.dtype + "\"");
  if (!e["shape"].is_array()) fail_input(at(where, name, "shape"), "must be an array of integers");
  std::int64_t numel = 1;
  for (std::size_t i = 0; i < e["shape"].size(); ++i) {
    const std::string w = at(where, name, "shape[" + std::to_string(i) + "]");
    const std::int64_t d = non_negative(e["shape"][i], w);
    if (d > 0 && numel > kMaxInt / size / d) {
      fail_input(at(where, name, "shape"), "overflows: " + json_excerpt(e["shape"]) + " x " +
                                               std::to_string(size) + " bytes exceeds 2^63 - 1");
    }
    numel *= d;
    t.shape.push_back(d);
  }
  t.bytes = numel * size;
  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2) {
    fail_input(at(where, name, "data_offsets"), "must be [begin, end]");
  }
  begin = non_negative(off[0], at(where, name, "data_offsets[0]"));
  end = non_negative(off[1], at(where, name, "data_offsets[1]"));
  if (end < begin || end - begin != t.bytes) {
    fail_input(at(where, name, "data_offsets"),
               off.dump() + " holds " + std::to_string(end >= begin ? end - begin : -1) +
                   " bytes, but " + t.dtype + " " + json_excerpt(e["shape"]) + " needs " +
                   std::to_string(t.bytes));
  }
  return t;
}

std::map<std::string, std::string> read_metadata(const nlohmann::json& m,
                                                 const std::string& where) {
  const std::string w = where + ": $.__metadata__";
  if (!m.is_object()) fail_input(w, "must be an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : m.items()) {
    if (!value.is_string()) fail_input(w + "." + key, "must be a string");
    out[key] = value.get<std::string>();
  }
  return out;
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const std::string& text, std::int64_t data_bytes,
                                           const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) fail_input(where, "the header is not valid JSON (not a safetensors file?)");
  if (!j.is_object())
    fail_input(where, "the header must be a JSON object, got " + json_type_name(j));
  SafetensorsHeader h;
  std::vector<std::pair<std::pair<std::int64_t, std::int64_t>, std::size_t>> spans;
  for (const auto& [name, entry] : j.items()) {
    if (name == "__metadata__") {
      h.metadata = read_metadata(entry, where);
      continue;
    }
    std::int64_t begin = 0, end = 0;
    h.tensors.push_back(read_entry(name, entry, where, begin, end));
    spans.push_back({{begin, end}, h.tensors.size() - 1});
  }
  // The data must be indexed entirely, in order, without holes or overlaps (safetensors' rule).
  std::sort(spans.begin(), spans.end());
  std::int64_t next = 0;
  std::vector<SavedTensor> ordered;
  for (const auto& [span, index] : spans) {
    const std::string& name = h.tensors[index].name;
    if (span.first != next) {
      fail_input(at(where, name, "data_offsets"),
                 "begins at " + std::to_string(span.first) + " but the previous tensor ends at " +
                     std::to_string(next) + (span.first < next ? " (overlap)" : " (a hole)"));
    }
    next = span.second;
    ordered.push_back(h.tensors[index]);
  }
  if (next != data_bytes) {
    fail_input(where, "the tensors' data ends at byte " + std::to_string(next) +
                          " after the header, but the file holds " + std::to_string(data_bytes) +
                          (next > data_bytes ? " (truncated)" : " (trailing bytes)"));
  }
  h.tensors = std::move(ordered);
  return h;
}

SafetensorsHeader read_safetensors_header(const std::filesystem::path& path,
                                          const std::string& name) {
  const std::string where = path.string();  // messages name the file as found
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail_input(where, "cannot read: " + ec.message());
  const auto file_bytes = static_cast<std::int64_t>(size);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(where, "cannot open");
  if (file_bytes < 8) {
    fail_input(where, "truncated: " + std::to_string(file_bytes) +
                          " bytes, shorter than safetensors' 8-byte header length");
  }
  unsigned char raw[8] = {};
  in.read(reinterpret_cast<char*>(raw), 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | raw[i];
  if (n > static_cast<std::uint64_t>(file_bytes - 8)) {
    fail_input(where, "header length " + std::to_string(n) + " exceeds the " +
                          std::to_string(file_bytes - 8) +
                          " bytes after it (truncated or not a "
                          "safetensors file)");
  }
  if (n > static_cast<std::uint64_t>(kMaxSafetensorsHeader)) {
    fail_input(where, "header length " + std::to_string(n) + " exceeds safetensors' limit of " +
                          std::to_string(kMaxSafetensorsHeader) + " bytes");
  }
  std::string text(static_cast<std::size_t>(n), '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (!in) fail_input(where, "truncated while reading the header");
  SafetensorsHeader h =
      parse_safetensors_header(text, file_bytes - 8 - static_cast<std::int64_t>(n), where);
  h.file_bytes = file_bytes;
  for (auto& t : h.tensors) t.file = name;
  return h;
}

}  // namespace trainsim
