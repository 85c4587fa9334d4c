#include "sim/core/build_id.hpp"

#include <elf.h>
#include <link.h>

#include <cstring>

namespace trainsim {

namespace {

// The build id in the notes of one loaded segment, or empty.
std::string id_in_notes(const char* p, const char* end) {
  while (p + sizeof(ElfW(Nhdr)) <= end) {
    const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
    const char* name = p + sizeof(ElfW(Nhdr));
    const char* desc = name + ((note->n_namesz + 3) & ~3U);
    const char* next = desc + ((note->n_descsz + 3) & ~3U);
    if (next > end) break;
    if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
        std::memcmp(name, "GNU", 4) == 0) {
      static constexpr char kHex[] = "0123456789abcdef";
      std::string hex;
      for (std::size_t i = 0; i < note->n_descsz; ++i) {
        const auto byte = static_cast<unsigned char>(desc[i]);
        hex += kHex[byte >> 4];
        hex += kHex[byte & 15];
      }
      return hex;
    }
    p = next;
  }
  return {};
}

// dl_iterate_phdr's callback: the first object is the program itself; stop there.
int program_build_id(dl_phdr_info* info, std::size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && out->empty(); ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_NOTE) continue;
    const char* start = reinterpret_cast<const char*>(info->dlpi_addr + segment.p_vaddr);
    *out = id_in_notes(start, start + segment.p_memsz);
  }
  return 1;
}

}  // namespace

const std::string& build_id() {
  static const std::string id = [] {
    std::string found;
    dl_iterate_phdr(program_build_id, &found);
    return found;
  }();
  return id;
}

}  // namespace trainsim
